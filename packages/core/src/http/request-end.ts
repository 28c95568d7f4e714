/**
 * When a request is done, every adapter alike: its settle and the release of its concurrency slots
 * wait for the later of the handler's end and the response's end, so a client that hangs up never
 * frees a slot while the handler still runs. Web-standard: no `node:` import.
 */
import { holdsSlots } from '../algorithms/concurrency.js';
import type { ResponseFacts } from '../model/response-facts.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { Decision } from '../types.js';

/** What an adapter calls once a request ended (`settlerFor`): it settles and frees the slots, once. */
export interface RequestSettle {
  (response: ResponseFacts): Promise<void>;
  /**
   * The longest lease (`leaseMs`) of the concurrency slots the decision holds; undefined when it
   * holds none. A request whose end the adapter cannot see (its client left and its handler never
   * ended the response; a Web body nobody reads) is settled this long after it was left, as the
   * slots of an instance that died come back.
   */
  readonly slotLeaseMs: number | undefined;
}

/** The longest lease of the concurrency slots `decision` took; undefined when it took none. */
export function slotLeaseOf(decision: Decision): number | undefined {
  let leaseMs: number | undefined;
  for (const result of decision.results) {
    // A concurrency policy's windowMs is its leaseMs.
    if (!holdsSlots(result) || !result.allowed) continue;
    if (leaseMs === undefined || result.windowMs > leaseMs) leaseMs = result.windowMs;
  }
  return leaseMs;
}

/** How long a request left by its client may go unseen before it is settled anyway. */
function abandonAfterMs(settle: RequestSettle): number {
  return settle.slotLeaseMs ?? OPTION_DEFAULTS.concurrencyLeaseMs;
}

/** The part of a Node `http.ServerResponse` that tells when a response ended. */
export interface NodeResponseEvents {
  readonly statusCode: number;
  readonly writableFinished?: boolean;
  /** True once `end()` was called: the handler is done with the response (maybe not yet sent). */
  readonly writableEnded?: boolean;
  /** True once the response (its connection) was destroyed: closed, maybe before it finished. */
  readonly destroyed?: boolean;
  once(event: 'finish' | 'close' | 'prefinish', listener: () => void): unknown;
}

/**
 * True when the client left before the check answered and the decision holds slots: they are freed
 * now, and the adapter does not run the handler (nobody waits for its answer).
 */
export function settledAsGone(res: NodeResponseEvents, settle: RequestSettle): boolean {
  if (settle.slotLeaseMs === undefined || res.destroyed !== true || res.writableFinished === true)
    return false;
  void settle({ statusCode: res.statusCode, completed: false });
  return true;
}

/**
 * Calls `settle` once a Node response ended: finished (`completed: true`) or its connection closed
 * before (`completed: false`), and, for a decision holding slots, once the handler is done with it
 * too, so a client that hangs up frees no slot while the handler runs. `handlerDone` is the
 * framework's own signal that the handler finished (Koa's and Hono's `next()`); without one, the
 * handler is done once it ended the response (`end()`, on a closed connection too), or, should it
 * never after its client left, `slotLeaseMs` later (see `RequestSettle`). `settle` runs once.
 */
export function settleOnResponseEnd(
  res: NodeResponseEvents,
  settle: RequestSettle,
  handlerDone?: PromiseLike<unknown>,
): void {
  // Without slots the response's end is the request's: a settle is not held up by the handler.
  const waitsForHandler = settle.slotLeaseMs !== undefined;
  const end = new NodeRequestEnd(res, settle, waitsForHandler && handlerDone !== undefined, waitsForHandler);
  if (waitsForHandler && handlerDone !== undefined) handlerDone.then(end.handlerEnded, end.handlerEnded);
  if (res.writableFinished === true || res.destroyed === true) end.closed();
  else {
    res.once('finish', end.finished);
    res.once('close', end.closed);
  }
}

/** One Node request on its way to its settle: the response's end and the handler's, whichever is later. */
class NodeRequestEnd {
  #ended: ResponseFacts | undefined;
  #handlerRunning = true;
  #settled = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly res: NodeResponseEvents,
    private readonly settle: RequestSettle,
    /** The framework says when the handler finished (`handlerEnded`); else the response's end does. */
    private readonly handlerSignal: boolean,
    /** False: the request is done once its response ended, whatever the handler still does. */
    private readonly waitsForHandler: boolean,
  ) {}

  /** The response was sent in full. */
  readonly finished = (): void => {
    this.#ended = { statusCode: this.res.statusCode, completed: true };
    if (!this.handlerSignal) this.#handlerRunning = false;
    this.#settleIfDone();
  };

  /** The connection closed: after the response finished, or before (the client left). */
  readonly closed = (): void => {
    const { res } = this;
    if (res.writableFinished === true) {
      this.finished();
      return;
    }
    if (this.#ended !== undefined) return;
    this.#ended = { statusCode: res.statusCode, completed: false };
    if (!this.waitsForHandler) this.#handlerRunning = false;
    else if (!this.handlerSignal) {
      if (res.writableEnded === true) this.#handlerRunning = false;
      else this.#awaitResponseEnd();
    }
    this.#settleIfDone();
  };

  /** The handler finished (the framework's signal, or its `end()` after the client left, or the bound). */
  readonly handlerEnded = (): void => {
    this.#handlerRunning = false;
    this.#settleIfDone();
  };

  /** The client left first: the handler is done when it ends the response, at the latest a lease later. */
  #awaitResponseEnd(): void {
    this.res.once('prefinish', this.handlerEnded);
    this.#timer = setTimeout(this.handlerEnded, abandonAfterMs(this.settle));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #settleIfDone(): void {
    if (this.#ended === undefined || this.#handlerRunning || this.#settled) return;
    this.#settled = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    void this.settle(this.#ended);
  }
}

/**
 * A Web `Response` like `response` whose body calls `settle` once it was read to the end
 * (`completed: true`), or when it is cancelled or fails (the client went away: `completed:
 * false`). Call it once the handler is done. Without a body, or for a `HEAD` request (the runtime
 * drops the body unread), `settle` is called now; a body nobody starts reading is settled
 * `slotLeaseMs` later (see `RequestSettle`). For runtimes without a Node response.
 */
export function settleWhenBodyEnds(response: Response, settle: RequestSettle, method?: string): Response {
  const { status } = response;
  const body = response.body;
  if (body === null || method === 'HEAD') {
    void settle({ statusCode: status, completed: true });
    return response;
  }
  const read = new BodyRead(body.getReader(), settle, status);
  const stream = new ReadableStream<Uint8Array>(read, { highWaterMark: 0 });
  return new Response(stream, { status, statusText: response.statusText, headers: response.headers });
}

/** The underlying source of a wrapped Web body: passes the chunks on, settles at its end. */
class BodyRead implements UnderlyingDefaultSource<Uint8Array> {
  #unread: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
    private readonly settle: RequestSettle,
    private readonly status: number,
  ) {
    this.#unread = setTimeout(this.#left, abandonAfterMs(settle));
    (this.#unread as { unref?: () => void }).unref?.();
  }

  async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    if (this.#unread !== undefined) clearTimeout(this.#unread);
    try {
      const { done, value } = await this.reader.read();
      if (done) {
        controller.close();
        void this.settle({ statusCode: this.status, completed: true });
      } else {
        controller.enqueue(value);
      }
    } catch (error) {
      this.#left();
      controller.error(error);
    }
  }

  cancel(reason: unknown): Promise<void> {
    this.#left();
    return this.reader.cancel(reason);
  }

  /** Nobody read the body, or it was cancelled or failed: the response did not complete. */
  readonly #left = (): void => {
    if (this.#unread !== undefined) clearTimeout(this.#unread);
    void this.settle({ statusCode: this.status, completed: false });
  };
}
