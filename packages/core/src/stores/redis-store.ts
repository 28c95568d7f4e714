/**
 * `RedisStore`: every check is ONE call of the decide script (EVALSHA, EVAL after NOSCRIPT).
 * Works with anything that offers `evalsha` and `eval` (`EvalClient`): ioredis `Redis` and
 * `Cluster` as they are, node-redis or an HTTP client through a small wrapper. Web-standard.
 */
import {
  DECIDE_SCRIPT,
  decodeScriptReply,
  encodeScriptArgs,
  encodeScriptKeys,
  RESET_SCRIPT,
} from '../redis/script.js';
import type {
  Clock,
  EvalClient,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreVerdict,
} from '../types.js';

/** Options of one `RedisStore.check`: the record of an idempotent request. */
export type RedisStoreCheckOptions = StoreCheckOptions;

/** Options of `RedisStore`. */
export interface RedisStoreOptions {
  /** The Redis client: an ioredis `Redis` or `Cluster`, or any `EvalClient`. */
  readonly client: EvalClient;
  /**
   * Tests only: pass this clock's time to the script instead of letting it read Redis `TIME`.
   * Production leaves it unset so every instance shares Redis's clock.
   */
  readonly clock?: Clock;
  /** The store owns the client: `close()` quits it. Set by `createRedisStore` for clients it built. */
  readonly ownsClient?: boolean;
}

/** True when a Redis error says the script is not in the server's cache. */
export function isNoScriptError(error: unknown): boolean {
  const message =
    typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : error;
  return typeof message === 'string' && message.includes('NOSCRIPT');
}

/** A Store backed by Redis (standalone or Cluster) through the decide script. */
export class RedisStore implements Store {
  /** Store kind, for logs and metrics. */
  readonly kind = 'redis';
  /** The client this store calls. */
  readonly client: EvalClient;
  private readonly clock: Clock | undefined;
  private readonly ownsClient: boolean;

  /** @param options the client, and a clock for tests */
  constructor(options: RedisStoreOptions) {
    const client = (options as RedisStoreOptions | undefined)?.client;
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.evalsha !== 'function' ||
      typeof client.eval !== 'function'
    ) {
      throw new TypeError(
        'RedisStore: "client" must offer evalsha() and eval() (an ioredis Redis or Cluster)',
      );
    }
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new TypeError('RedisStore: "clock" must be a function returning milliseconds');
    }
    this.client = client;
    this.clock = options.clock;
    this.ownsClient = options.ownsClient === true;
  }

  /**
   * Decides every entry in one atomic script call; all or nothing. With `requestKey` and
   * `requestTtlMs`, a consume is idempotent: a recorded request replays its verdicts and
   * charges nothing; otherwise its verdicts are recorded (in the same script call).
   */
  async check(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options?: RedisStoreCheckOptions,
  ): Promise<StoreVerdict[]> {
    if (entries.length === 0) return [];
    const requestKey = options?.requestKey;
    const requestTtlMs = options?.requestTtlMs;
    if ((requestKey === undefined) !== (requestTtlMs === undefined)) {
      throw new TypeError('RedisStore: "requestKey" and "requestTtlMs" go together');
    }
    // KEYS then ARGV in one array: one spread per call.
    const params: (string | number)[] = encodeScriptKeys(entries, requestKey);
    const numKeys = params.length;
    for (const arg of encodeScriptArgs(entries, mode, this.clock?.(), requestTtlMs)) params.push(arg);
    let reply: unknown;
    try {
      reply = await this.client.evalsha(DECIDE_SCRIPT.sha1, numKeys, ...params);
    } catch (error) {
      if (!isNoScriptError(error)) throw error;
      // Redis restarted or SCRIPT FLUSH ran: EVAL loads the script again and carries on.
      reply = await this.client.eval(DECIDE_SCRIPT.source, numKeys, ...params);
    }
    return decodeScriptReply(reply, entries);
  }

  /** Deletes the state behind `keys` (keys of one identity: one slot on Cluster). */
  async reset(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    try {
      await this.client.evalsha(RESET_SCRIPT.sha1, keys.length, ...keys);
    } catch (error) {
      if (!isNoScriptError(error)) throw error;
      await this.client.eval(RESET_SCRIPT.source, keys.length, ...keys);
    }
  }

  /** Quits the client when this store built it (`createRedisStore` from a URL or nodes); else does nothing. */
  async close(): Promise<void> {
    if (!this.ownsClient) return;
    const quit = (this.client as { quit?: () => Promise<unknown> }).quit;
    if (typeof quit === 'function') await quit.call(this.client);
  }
}
