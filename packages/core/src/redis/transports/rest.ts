/**
 * The transport for Redis over HTTP (the Upstash REST protocol, with `fetch`): each script
 * call is one POST. Web standards only, so it runs on edge runtimes.
 */
import { createRestCommand, type RestEvalClientOptions } from '../rest-client.js';
import { defineTransport, type ScriptTransport } from '../transport.js';

/** Options of {@link restTransport}: those of `createRestEvalClient`, and the slot rule. */
export interface RestTransportOptions extends RestEvalClientOptions {
  /**
   * Whether one call must keep its keys in one hash slot. Default true (the server may front
   * a Cluster); false lets checks of every identity share one POST.
   */
  readonly singleSlot?: boolean;
}

/**
 * A transport that sends `["EVALSHA", sha1, numKeys, ...keys, ...args]` (EVAL after NOSCRIPT)
 * to an Upstash-compatible REST endpoint. Bad options throw at once, naming the option.
 *
 * @example new RedisStore({ transport: restTransport({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }) })
 */
export function restTransport(options: RestTransportOptions): ScriptTransport {
  const command = createRestCommand(options, 'restTransport');
  const singleSlot = options.singleSlot ?? true;
  if (typeof singleSlot !== 'boolean') {
    throw new TypeError(`restTransport: "singleSlot" must be a boolean, got ${String(options.singleSlot)}`);
  }
  return defineTransport({
    singleSlot,
    pipelines: false,
    evalsha: (sha1, keys, args) => command(['EVALSHA', sha1, keys.length, ...keys, ...args]),
    eval: (source, keys, args) => command(['EVAL', source, keys.length, ...keys, ...args]),
  });
}
