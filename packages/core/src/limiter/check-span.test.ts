/**
 * Traces with the real OpenTelemetry SDK (sdk-trace-base, in-memory exporter, AsyncLocalStorage
 * context): one span per check, a child of the active request span, the store call as an event,
 * no identity, key or path anywhere; and no span at all without an SDK.
 */

import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../stores/memory-store.js';
import { createLimiter } from './create-limiter.js';
import { CHECK_SPAN_NAME, STORE_CALL_EVENT, TRACER_NAME } from './decision.js';
import { SwitchableStore } from './test-stores.test-support.js';

const T0 = 1_764_400_200_000;

/** Registers a real SDK globally; returns its exporter. */
function registerSdk(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  return exporter;
}

afterEach(() => {
  trace.disable();
  context.disable();
});

describe('limiter check spans', () => {
  it('makes one span per check, a child of the active span, with policies, outcome, source and store', async () => {
    const exporter = registerSdk();
    const clock = () => T0;
    const limiter = createLimiter({
      policies: [
        { name: 'burst', algorithm: 'fixed-window', limit: 1, window: '1m' },
        { name: 'daily', algorithm: 'fixed-window', limit: 100, window: '1d' },
      ],
      store: new MemoryStore({ clock }),
      clock,
    });
    const tracer = trace.getTracer('app');
    await tracer.startActiveSpan('GET /widgets/:id', async (request) => {
      await limiter.check({ identity: 'tenant-secret-42', route: 'GET /widgets/:id' });
      await limiter.check({ identity: 'tenant-secret-42', route: 'GET /widgets/:id' });
      await limiter.check({ identity: 'tenant-secret-42', route: 'GET /widgets/:id' });
      request.end();
    });
    const spans = exporter.getFinishedSpans();
    const checks = spans.filter((s) => s.name === CHECK_SPAN_NAME);
    const request = spans.find((s) => s.name === 'GET /widgets/:id');
    expect(checks).toHaveLength(3);
    for (const span of checks) {
      expect(span.parentSpanContext?.spanId).toBe(request?.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(request?.spanContext().traceId);
      expect(span.instrumentationScope.name).toBe(TRACER_NAME);
      expect(span.attributes['sluice.policies']).toEqual(['burst', 'daily']);
      expect(span.attributes['sluice.store']).toBe('memory');
    }
    const [first, second, third] = checks;
    expect(first?.attributes).toMatchObject({
      'sluice.outcome': 'allowed',
      'sluice.decision.source': 'store',
      'sluice.allowed': true,
    });
    expect(first?.events.map((e) => [e.name, e.attributes?.['sluice.store.result']])).toEqual([
      [STORE_CALL_EVENT, 'ok'],
    ]);
    expect(second?.attributes).toMatchObject({
      'sluice.outcome': 'over_limit',
      'sluice.decision.source': 'store',
      'sluice.allowed': false,
      'sluice.policy': 'burst',
    });
    // The third is the deny cache's: no store call, no event.
    expect(third?.attributes['sluice.decision.source']).toBe('deny-cache');
    expect(third?.events).toEqual([]);
    const everything = JSON.stringify(
      checks.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
    );
    expect(everything).not.toMatch(/tenant-secret-42|widgets|sluice:\{/);
  });

  it('marks a check whose store failed: the event names the cause, the status is ERROR', async () => {
    const exporter = registerSdk();
    const store = new SwitchableStore(() => T0);
    store.behaviour = 'error';
    const limiter = createLimiter({
      policies: [{ name: 'lenient', limit: 10, window: '1m', failMode: 'open' }],
      store,
      clock: () => T0,
    });
    await limiter.check({ identity: 'a' });
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes).toMatchObject({
      'sluice.outcome': 'unavailable',
      'sluice.decision.source': 'fail-open',
    });
    expect(span?.events.map((e) => e.attributes?.['sluice.store.result'])).toEqual(['error']);
    expect(span?.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'store unavailable: error' });
  });

  it('starts no span without an SDK, and starts them once one is registered', async () => {
    const limiter = createLimiter({ policies: [{ name: 'p', limit: 10, window: '1m' }] });
    await limiter.check({ identity: 'a' });
    const exporter = registerSdk();
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    await limiter.check({ identity: 'a' });
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([CHECK_SPAN_NAME]);
  });
});
