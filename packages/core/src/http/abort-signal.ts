/** The abort signal of a request served by Node's `http` module, made only when asked for. */
import type { NodeResponseEvents } from './request-end.js';

/**
 * The `abortSignal` of `RequestFacts` for a Node response (Express, Koa, Nest, Fastify, Hono on
 * Node): a function that, on its first call, makes an `AbortSignal` fired when the connection
 * closes before the response finished (the client went away). Nothing is made or listened to
 * until a check may wait for its turn and calls it.
 */
export function abortSignalOf(res: NodeResponseEvents): () => AbortSignal {
  let signal: AbortSignal | undefined;
  return () => {
    if (signal !== undefined) return signal;
    const controller = new AbortController();
    signal = controller.signal;
    if (res.writableFinished !== true && res.destroyed === true) controller.abort();
    else res.once('close', () => res.writableFinished === true || controller.abort());
    return signal;
  };
}
