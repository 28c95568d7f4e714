import { describe, expect, it } from 'vitest';
import { createLimiter } from '../limiter/index.js';
import { MemoryStore } from '../stores/memory-store.js';
import { DecisionFanout } from './decision-fanout.js';
import { BuiltOnce, setResponseHeader, unsentNodeResponse } from './node-response.js';

const nodeLike = (headersSent: boolean) => ({ headersSent, statusCode: 200, once() {}, setHeader() {} });

describe('unsentNodeResponse', () => {
  it('finds a Node response, or the one a reply holds as raw, only while its headers are unsent', () => {
    const res = nodeLike(false);
    expect(unsentNodeResponse(res)).toBe(res);
    expect(unsentNodeResponse({ raw: res, header() {} })).toBe(res);
    expect(unsentNodeResponse(nodeLike(true))).toBeUndefined();
    expect(unsentNodeResponse(new Response('x'))).toBeUndefined();
    expect(unsentNodeResponse(undefined)).toBeUndefined();
  });
});

describe('setResponseHeader', () => {
  it('uses setHeader when there is one, else header(), else nothing', () => {
    const set: string[] = [];
    setResponseHeader({ setHeader: (n: string, v: string) => set.push(`set ${n}=${v}`) }, 'A', '1');
    setResponseHeader({ header: (n: string, v: string) => set.push(`header ${n}=${v}`) }, 'B', '2');
    setResponseHeader(undefined, 'C', '3');
    expect(set).toEqual(['set A=1', 'header B=2']);
  });
});

describe('BuiltOnce', () => {
  it('builds once for every call, those made during the build too', async () => {
    let builds = 0;
    const once = new BuiltOnce(async (n: number) => {
      builds++;
      return n * 2;
    });
    const [a, b] = await Promise.all([once.get(1), once.get(5)]);
    expect([a, b, once.get(9), builds]).toEqual([2, 2, 2, 1]);
  });

  it('builds again after a failed build', async () => {
    let builds = 0;
    const once = new BuiltOnce((n: number) => {
      builds++;
      if (builds === 1) throw new Error('env not ready');
      return n;
    });
    await expect(once.get(1)).rejects.toThrow('env not ready');
    await expect(once.get(2)).resolves.toBe(2);
    expect(builds).toBe(2);
  });
});

describe('DecisionFanout', () => {
  it('gives a listener the decisions of limiters added before and after it, until it unsubscribes', async () => {
    const store = new MemoryStore();
    const limiterOf = (name: string) =>
      createLimiter({ policies: [{ name, limit: 5, window: '1m' }], store });
    const fanout = new DecisionFanout();
    const first = fanout.add(limiterOf('a'));
    const heard: (string | undefined)[] = [];
    const off = fanout.onDecision((event) => heard.push(event.policy));
    const later = fanout.add(limiterOf('b'));
    await first.check({ identity: 'x' });
    await later.check({ identity: 'x' });
    off();
    await later.check({ identity: 'x' });
    expect(heard).toEqual(['a', 'b']);
  });
});
