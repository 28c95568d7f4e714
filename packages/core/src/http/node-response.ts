/**
 * Finding the Node response behind a framework's own (Hono's `c.env.outgoing` on
 * @hono/node-server, a Fastify reply's `raw`), by its shape: no `node:` import, so it is safe on
 * every runtime.
 */
import type { NodeResponseEvents } from './request-end.js';

/** The part of a Node `http.ServerResponse` adapters use: its end events and `setHeader`. */
export interface NodeResponse extends NodeResponseEvents {
  readonly headersSent: boolean;
  setHeader(name: string, value: string): unknown;
}

/**
 * `candidate` (or its `raw`, as a Fastify reply holds it) when it is a Node response whose
 * headers are still unsent; undefined otherwise (a Web `Response`, a mock, a sent response).
 */
export function unsentNodeResponse(candidate: unknown): NodeResponse | undefined {
  if (typeof candidate !== 'object' || candidate === null) return undefined;
  const raw = (candidate as { raw?: unknown }).raw;
  const node = (typeof raw === 'object' && raw !== null ? raw : candidate) as Partial<NodeResponse>;
  return typeof node.once === 'function' && typeof node.setHeader === 'function' && node.headersSent === false
    ? (node as NodeResponse)
    : undefined;
}

/**
 * Sets a response header on whatever the framework hands over: a Node response (`setHeader`,
 * Express) or a reply with `header()` (Fastify); anything else is left alone.
 */
export function setResponseHeader(target: unknown, name: string, value: string): void {
  const response = target as { setHeader?: unknown; header?: unknown } | undefined;
  if (typeof response?.setHeader === 'function') response.setHeader(name, value);
  else if (typeof response?.header === 'function') response.header(name, value);
}

/**
 * A value built from the first `get(context)`'s argument, once, and kept (Hono's options from
 * the first request's context, for env bindings). Calls that come while it is built wait for the
 * same build; a failed build is retried by the next call.
 */
export class BuiltOnce<C, V> {
  #value: V | undefined;
  #building: Promise<V> | undefined;

  constructor(private readonly build: (context: C) => V | Promise<V>) {}

  /** The value, or the build under way (started now with `context` when none is). */
  get(context: C): V | Promise<V> {
    if (this.#value !== undefined) return this.#value;
    this.#building ??= this.#run(context);
    return this.#building;
  }

  async #run(context: C): Promise<V> {
    // Past this point the build runs after `get` has stored this promise, so a build that throws
    // at once still clears it (and the next call builds again).
    await undefined;
    try {
      this.#value = await this.build(context);
      return this.#value;
    } finally {
      this.#building = undefined;
    }
  }
}
