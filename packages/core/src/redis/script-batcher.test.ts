/**
 * The script batcher over a recording transport with a real redis-server behind it: what each
 * call carries (grouped by hash slot or not), NOSCRIPT answered once by EVAL, the reply shape
 * check, maxBatch, a transport that throws. And `hashSlotOf` against an independent CRC16.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { keySlot } from '../../../../test/cluster/key-slot.js';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { buildKey } from '../keys/build-keys.js';
import { definePolicy } from '../policy/define-policy.js';
import type { StoreEntry, StoreVerdict } from '../types.js';
import { hashSlotOf } from './key-slot.js';
import { DECIDE_SCRIPTS, encodeScriptNow } from './script.js';
import { ScriptBatcher } from './script-batcher.js';
import { defineTransport, type ScriptTransport } from './transport.js';

let server: RedisProcess;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1');
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

beforeEach(async () => {
  await redis.flushall();
});

/** One command the transport sent to Redis. */
interface Sent {
  readonly command: 'evalsha' | 'eval';
  readonly keys: readonly string[];
}

/** A transport to the real Redis that records every command it sends. */
function recording(singleSlot: boolean): { transport: ScriptTransport; sent: Sent[] } {
  const sent: Sent[] = [];
  const transport = defineTransport({
    singleSlot,
    pipelines: true,
    evalsha: (sha1, keys, args) => {
      sent.push({ command: 'evalsha', keys: [...keys] });
      return redis.evalsha(sha1, keys.length, ...keys, ...args);
    },
    eval: (source, keys, args) => {
      sent.push({ command: 'eval', keys: [...keys] });
      return redis.eval(source, keys.length, ...keys, ...args);
    },
  });
  return { transport, sent };
}

/** Loads every decide script (the full one and each algorithm's), so no call meets NOSCRIPT. */
async function loadScripts(): Promise<void> {
  for (const script of DECIDE_SCRIPTS) await redis.script('LOAD', script.source);
}

const T0 = 1_800_000_000_000;
const NOW = encodeScriptNow(T0);
const three = definePolicy({ name: 'three', algorithm: 'fixed-window', limit: 3, window: '10s' });
const entry = (identity: string): StoreEntry[] => [
  { key: buildKey('sb', identity, three), policy: three, cost: 1 },
];
const never = () => {};

/** [allowed, remaining] of the checks of identities a, b, c, a, a, a under `three`, in that order. */
const SIX_CHECKS_VERDICTS = [
  [true, 2],
  [true, 2],
  [true, 2],
  [true, 1],
  [true, 0],
  [false, 0],
];

/** Builds a batcher whose flush the test calls itself. */
function batcher(transport: ScriptTransport, maxBatch = 128) {
  const flushes: (() => void)[] = [];
  const b = new ScriptBatcher({
    transport,
    maxBatch,
    maxBatchWaitMs: 60_000,
    scheduleFlush: (flush) => flushes.push(flush),
  });
  const flush = (): void => {
    for (const f of flushes.splice(0)) f();
  };
  return { b, flush };
}

/**
 * A batcher over a transport whose every call waits for its own gate (in `gates`) before it
 * reaches the real Redis, after one call was sent and answered (its group ran dry).
 */
async function gatedAfterOneCall(pipelines: boolean) {
  const { transport: real, sent } = recording(false);
  await loadScripts();
  const gates: (() => void)[] = [];
  const gated: ScriptTransport = {
    singleSlot: false,
    pipelines,
    run: (script, keys, args) =>
      new Promise<void>((open) => gates.push(open)).then(() => real.run(script, keys, args)),
  };
  const { b, flush } = batcher(gated);
  const warm = b.decide(entry('w'), 'consume', NOW, undefined, undefined);
  flush();
  gates.shift()?.();
  await warm;
  return { b, flush, gates, sent };
}

/** Identities, two by two, whose keys lie in the same slot though their hash tags differ. */
function sameSlotPairs(count: number): [string, string][] {
  const bySlot = new Map<number, string>();
  const pairs: [string, string][] = [];
  for (let i = 0; pairs.length < count; i++) {
    const identity = `u${i}`;
    const slot = hashSlotOf(entry(identity)[0]!.key);
    const other = bySlot.get(slot);
    if (other === undefined) bySlot.set(slot, identity);
    else {
      pairs.push([other, identity]);
      bySlot.delete(slot);
    }
  }
  return pairs;
}

describe('ScriptBatcher', () => {
  it('sends every check of a flush in one call when any keys may share one', async () => {
    const { transport, sent } = recording(false);
    const { b, flush } = batcher(transport);
    await loadScripts();
    const ids = ['a', 'b', 'c', 'a', 'a', 'a'];
    const pending = ids.map((id) => b.decide(entry(id), 'consume', NOW, undefined, undefined));
    expect(sent).toHaveLength(0);
    flush();
    const verdicts = await Promise.all(pending);
    expect(sent).toEqual([{ command: 'evalsha', keys: ids.map((id) => entry(id)[0]!.key) }]);
    expect(verdicts.map((v) => [v[0]!.allowed, v[0]!.remaining])).toEqual(SIX_CHECKS_VERDICTS);
  });

  it('on a single-slot transport, one call per hash slot, checks of different tags in one slot together', async () => {
    const { transport, sent } = recording(true);
    const { b, flush } = batcher(transport);
    await loadScripts();
    const pairs = sameSlotPairs(3);
    const ids = [...pairs.flat(), 'lonely'];
    const pending = ids.map((id) => b.decide(entry(id), 'consume', NOW, undefined, undefined));
    flush();
    const verdicts = await Promise.all(pending);
    expect(verdicts.every((v) => v[0]!.allowed && v[0]!.remaining === 2)).toBe(true);
    const slots = new Set(ids.map((id) => hashSlotOf(entry(id)[0]!.key)));
    expect(sent).toHaveLength(slots.size); // 4 calls for 7 identities
    for (const call of sent) expect(new Set(call.keys.map(hashSlotOf)).size).toBe(1);
    for (const [x, y] of pairs) {
      expect(sent.some((c) => c.keys.includes(entry(x)[0]!.key) && c.keys.includes(entry(y)[0]!.key))).toBe(
        true,
      );
    }
  });

  it('answers NOSCRIPT once with EVAL, then EVALSHA again', async () => {
    const { transport, sent } = recording(false);
    const { b, flush } = batcher(transport);
    await redis.script('FLUSH');
    const first = [b.decide(entry('n'), 'consume', NOW, undefined, undefined)];
    flush();
    expect((await Promise.all(first))[0]![0]!.remaining).toBe(2);
    const second = b.decide(entry('n'), 'consume', NOW, undefined, undefined);
    flush();
    expect((await second)[0]!.remaining).toBe(1);
    expect(sent.map((s) => s.command)).toEqual(['evalsha', 'eval', 'evalsha']);
  });

  it('cuts a call at maxBatch checks', async () => {
    const { transport, sent } = recording(false);
    const { b, flush } = batcher(transport, 3);
    const pending = Array.from({ length: 7 }, (_, i) =>
      b.decide(entry(`m${i}`), 'consume', NOW, undefined, undefined),
    );
    flush();
    await Promise.all(pending);
    expect(sent.filter((s) => s.command === 'evalsha').map((s) => s.keys.length)).toEqual([3, 3, 1]);
  });

  it('rejects every check of a call whose reply has the wrong shape', async () => {
    const real = recording(false).transport;
    // The real reply, one item short.
    const short: ScriptTransport = {
      singleSlot: false,
      pipelines: true,
      run: async (script, keys, args) => ((await real.run(script, keys, args)) as unknown[]).slice(1),
    };
    const { b, flush } = batcher(short);
    const pending = [
      b.decide(entry('s1'), 'consume', NOW, undefined, undefined),
      b.decide(entry('s2'), 'peek', NOW, undefined, undefined),
    ];
    flush();
    const results = await Promise.allSettled(pending);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect(String((r as PromiseRejectedResult).reason)).toContain('unexpected decide script reply (shape)');
    }
  });

  it('turns a transport that throws into rejected checks', async () => {
    const throwing: ScriptTransport = {
      singleSlot: false,
      pipelines: true,
      run: () => {
        throw new Error('transport down');
      },
    };
    const b = new ScriptBatcher({
      transport: throwing,
      maxBatch: 1,
      maxBatchWaitMs: 2,
      scheduleFlush: never,
    });
    await expect(b.decide(entry('t'), 'consume', NOW, undefined, undefined)).rejects.toThrow(
      'transport down',
    );
  });

  it('keeps two calls in flight: a flush after its group ran dry goes as two calls, in order', async () => {
    const { transport, sent } = recording(false);
    const { b, flush } = batcher(transport);
    await loadScripts();
    const first = b.decide(entry('d0'), 'consume', NOW, undefined, undefined);
    flush();
    await first; // answered, none in flight: the group ran dry
    const ids = ['a', 'b', 'c', 'a', 'a', 'a'];
    const pending = ids.map((id) => b.decide(entry(id), 'consume', NOW, undefined, undefined));
    flush();
    const verdicts = await Promise.all(pending);
    expect(sent.slice(1)).toEqual([
      { command: 'evalsha', keys: ids.slice(0, 3).map((id) => entry(id)[0]!.key) },
      { command: 'evalsha', keys: ids.slice(3).map((id) => entry(id)[0]!.key) },
    ]);
    // The same verdicts as one call would give: the second call runs after the first.
    expect(verdicts.map((v) => [v[0]!.allowed, v[0]!.remaining])).toEqual(SIX_CHECKS_VERDICTS);
  });

  it('with two calls in flight, holds the next checks and sends them as one call when an answer comes back', async () => {
    const { b, flush, gates, sent } = await gatedAfterOneCall(true);
    const two = [
      b.decide(entry('h1'), 'consume', NOW, undefined, undefined),
      b.decide(entry('h2'), 'consume', NOW, undefined, undefined),
    ];
    flush(); // ran dry: two calls of one check each, both in flight
    expect(gates).toHaveLength(2);
    const held = ['h3', 'h4', 'h5'].map((id) => b.decide(entry(id), 'consume', NOW, undefined, undefined));
    flush();
    expect(gates).toHaveLength(2); // nothing more sent while two calls are in flight
    gates.shift()?.();
    await two[0];
    expect(gates).toHaveLength(2); // the answer sent the three waiting checks as one call
    for (const open of gates.splice(0)) open();
    await Promise.all([...two, ...held]);
    expect(sent.map((s) => s.keys.length)).toEqual([1, 1, 1, 3]);
  });

  it('over a transport that does not pipeline (Redis over HTTP, Web runtimes), sends each flush at once as one call', async () => {
    const { b, flush, gates, sent } = await gatedAfterOneCall(false);
    const first = ['p1', 'p2'].map((id) => b.decide(entry(id), 'consume', NOW, undefined, undefined));
    flush(); // ran dry, yet one call
    expect(gates).toHaveLength(1);
    const second = [b.decide(entry('p3'), 'consume', NOW, undefined, undefined)];
    flush();
    const third = [b.decide(entry('p4'), 'consume', NOW, undefined, undefined)];
    flush(); // never held behind the calls in flight: no request waits on another's answer
    expect(gates).toHaveLength(3);
    for (const open of gates.splice(0)) open();
    await Promise.all([...first, ...second, ...third]);
    expect(sent.map((s) => s.keys.length)).toEqual([1, 2, 1, 1]);
  });

  it('sends checks held behind two unanswered calls once they waited maxBatchWaitMs (a silent Redis)', async () => {
    let calls = 0;
    const silent: ScriptTransport = {
      singleSlot: false,
      pipelines: true,
      run: () => {
        calls++;
        return new Promise<never>(() => {});
      },
    };
    const b = new ScriptBatcher({
      transport: silent,
      maxBatch: 128,
      maxBatchWaitMs: 5,
      scheduleFlush: (flush) => queueMicrotask(flush),
    });
    for (let i = 1; i <= 3; i++) {
      void b.decide(entry(`silent${i}`), 'consume', NOW, undefined, undefined);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(calls).toBe(i);
    }
  });

  it('sends nothing for an invalid check and keeps the others of its batch', async () => {
    const { transport, sent } = recording(false);
    const { b, flush } = batcher(transport);
    expect(() => b.decide([{ ...entry('x')[0]!, cost: 0 }], 'consume', NOW, undefined, undefined)).toThrow(
      /"cost"/,
    );
    const ok: Promise<StoreVerdict[]> = b.decide(entry('y'), 'consume', NOW, undefined, undefined);
    flush();
    expect((await ok)[0]!.remaining).toBe(2);
    expect(sent.at(-1)?.keys).toEqual([entry('y')[0]!.key]);
  });
});

describe('hashSlotOf', () => {
  it('agrees with a CRC16 over TextEncoder bytes, hash tags and any text included', () => {
    // Whole code points, and raw UTF-16 units (lone surrogates encode as U+FFFD).
    const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u));
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.string({ unit: codeUnit, maxLength: 12 }),
    );
    const key = fc.oneof(
      text,
      fc.tuple(text, text, text).map(([a, b, c]) => `${a}{${b}}${c}`),
      fc.tuple(text, text).map(([a, b]) => `${a}{}${b}`),
    );
    fc.assert(
      fc.property(key, (k) => {
        expect(hashSlotOf(k)).toBe(keySlot(k));
      }),
      { numRuns: 2000 },
    );
  });

  it('matches the slots Redis documents', () => {
    // From the Cluster specification: 123456789 has CRC16 0x31C3.
    expect(hashSlotOf('123456789')).toBe(0x31c3 % 16_384);
    expect(hashSlotOf('{user1000}.following')).toBe(hashSlotOf('{user1000}.followers'));
    expect(hashSlotOf('{user1000}.following')).toBe(hashSlotOf('user1000'));
  });
});
