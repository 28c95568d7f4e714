/** A port that was free on 127.0.0.1 a moment ago. */
export declare function freePort(): Promise<number>;
/** True when `port` on 127.0.0.1 can be listened on now. */
export declare function canListen(port: number): Promise<boolean>;
