/**
 * Traces of limiter checks through `@opentelemetry/api` only: one span per `limiter.check`, a
 * child of the active span (the request's), with the store call as an event. Attributes are policy
 * names, the outcome, the decision source and the store kind: never an identity, a key or a path.
 * Redis commands themselves are left to the Redis client's own instrumentation.
 * Without a registered SDK nothing is started or allocated: the check asks the global provider
 * for a delegate tracer, finds none, and goes on.
 */
import {
  ProxyTracerProvider,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Decision, StoreEntry } from '../types.js';
import { storeErrorCauseOf } from './counters.js';
import { type StoreAnswer, StoreUnavailable } from './store-answer.js';

/** The tracer's name (the instrumentation scope). */
export const TRACER_NAME = '@sluice/core';

/** The name of the span of one check. */
export const CHECK_SPAN_NAME = 'sluice.check';

/** The name of the event for the store call of a check. */
export const STORE_CALL_EVENT = 'sluice.store.call';

/** The tracer of a registered SDK; undefined when none is registered (the no-op proxy). */
function registeredTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider
    ? provider.getDelegateTracer(TRACER_NAME)
    : provider.getTracer(TRACER_NAME);
}

/**
 * Starts the span of one check as a child of the active span, or returns undefined when no SDK
 * is registered. `storeKind` is the store's `kind` (`redis`, `memory`).
 */
export function startCheckSpan(entries: readonly StoreEntry[], storeKind: string): Span | undefined {
  const tracer = registeredTracer();
  if (tracer === undefined) return undefined;
  return tracer.startSpan(CHECK_SPAN_NAME, {
    kind: SpanKind.INTERNAL,
    attributes: { 'sluice.policies': entries.map((e) => e.policy.name), 'sluice.store': storeKind },
  });
}

/**
 * Ends a check's span: the decision's outcome, source, deciding policy and whether it was allowed;
 * an event for the store call (`sluice.store.result`: `ok`, `timeout`, `error`, `breaker_open`)
 * when the store was asked; status ERROR when the store could not decide.
 */
export function endCheckSpan(span: Span, decision: Decision, answer: StoreAnswer): void {
  if (answer instanceof StoreUnavailable) {
    const cause = storeErrorCauseOf(answer.cause);
    span.addEvent(STORE_CALL_EVENT, { 'sluice.store.result': cause });
    span.setStatus({ code: SpanStatusCode.ERROR, message: `store unavailable: ${cause}` });
  } else if (answer.source === 'store') {
    span.addEvent(STORE_CALL_EVENT, { 'sluice.store.result': 'ok' });
  }
  span.setAttributes({
    'sluice.outcome': decision.outcome,
    'sluice.decision.source': decision.source,
    'sluice.allowed': decision.allowed,
    'sluice.shadowed': decision.shadowed,
  });
  if (decision.policy !== undefined) span.setAttribute('sluice.policy', decision.policy);
  span.end();
}
