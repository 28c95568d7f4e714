/**
 * The script transport: how a Redis store reaches Redis. One operation, run a script on some
 * keys and arguments, plus whether one call must keep its keys in one hash slot (Redis
 * Cluster). EVALSHA-then-EVAL-on-NOSCRIPT lives here once (`defineTransport`). Web-standard.
 */

/** A Lua script as the server caches it: its source and the SHA1 (hex) of that source. */
export interface ScriptSource {
  readonly source: string;
  readonly sha1: string;
}

/** What a Redis store sends its scripts through: one client (ioredis, node-redis, HTTP, ...). */
export interface ScriptTransport {
  /**
   * True when every key of one call must lie in one hash slot (Redis Cluster): the batcher
   * then groups checks by slot. False for a standalone Redis, where any keys may share a call.
   */
  readonly singleSlot: boolean;
  /**
   * True for one connection that pipelines (ioredis, node-redis): the batcher keeps two calls in
   * flight and holds further checks for an answer. False or unset (Redis over HTTP, where each call
   * is a request of its own, and Web runtimes, where a request must not wait on another request's
   * I/O): every flush goes out at once as one call.
   */
  readonly pipelines?: boolean;
  /** The client behind the transport, when there is one (read for `CONFIG GET maxmemory-policy`). */
  readonly client?: unknown;
  /** Runs `script` (EVALSHA; EVAL when the server lacks it) and resolves with its reply. */
  run(script: ScriptSource, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** Closes the client behind the transport (called only for a client the store owns). */
  close?(): Promise<void>;
  /** NOSCRIPT replies answered by sending the script with EVAL, when the transport counts them. */
  readonly noscriptReloads?: number;
}

/** The two raw commands a transport speaks in its client's own style. */
export interface TransportCommands {
  /** As in {@link ScriptTransport}. */
  readonly singleSlot: boolean;
  /** As in {@link ScriptTransport}. */
  readonly pipelines?: boolean;
  /** As in {@link ScriptTransport}. */
  readonly client?: unknown;
  /** EVALSHA `sha1` with these keys and arguments. */
  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** EVAL `source` with these keys and arguments. */
  eval(source: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** As in {@link ScriptTransport}. */
  close?(): Promise<void>;
}

/** True when a Redis error says the script is not in the server's cache. */
export function isNoScriptError(error: unknown): boolean {
  const message =
    typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : error;
  return typeof message === 'string' && message.includes('NOSCRIPT');
}

/**
 * A transport from a client's two raw commands: `run` sends EVALSHA and, when the server does
 * not have the script (a restart, SCRIPT FLUSH), EVAL with the source. Any other error passes
 * through untouched, without a retry.
 */
export function defineTransport(commands: TransportCommands): ScriptTransport {
  let reloads = 0;
  const transport: ScriptTransport = {
    singleSlot: commands.singleSlot,
    pipelines: commands.pipelines ?? false,
    client: commands.client,
    get noscriptReloads(): number {
      return reloads;
    },
    async run(script, keys, args) {
      try {
        return await commands.evalsha(script.sha1, keys, args);
      } catch (error) {
        if (!isNoScriptError(error)) throw error;
        reloads++;
        return await commands.eval(script.source, keys, args);
      }
    },
  };
  if (commands.close !== undefined) transport.close = commands.close;
  return transport;
}

/** True when `value` has the shape of a {@link ScriptTransport}. */
export function isScriptTransport(value: unknown): value is ScriptTransport {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ScriptTransport).run === 'function' &&
    typeof (value as ScriptTransport).singleSlot === 'boolean'
  );
}
