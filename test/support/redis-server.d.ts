import type { ChildProcess, SpawnOptions } from 'node:child_process';

/** A private redis-server on 127.0.0.1 (redis-server.js). */
export interface RedisProcess {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  /** Stop with SIGTERM (SIGKILL after 3 s) and remove its directory. */
  stop(): Promise<void>;
}

/** Where and how to start it. */
export interface StartRedisOptions {
  /** A port; a free one when unset. */
  readonly port?: number;
  /** Extra `redis-server` arguments, e.g. `['--cluster-enabled', 'yes']`. */
  readonly args?: readonly string[];
  /** Its working directory; a fresh temporary one (removed on stop) when unset. */
  readonly dir?: string;
}

/** True when redis-server is on PATH. */
export declare function hasRedisServer(): boolean;
/** Resolves when `PING` on the port answers `PONG`. */
export declare function waitForRedis(port: number, timeoutMs?: number): Promise<void>;
/** Start a private redis-server on a free loopback port. */
export declare function startRedis(options?: StartRedisOptions): Promise<RedisProcess>;
/** Spawn a program; rejects with "<command> did not start (is it on PATH?)" when it cannot start. */
export declare function spawnProgram(
  command: string,
  args: readonly string[],
  options: SpawnOptions,
): Promise<ChildProcess>;
