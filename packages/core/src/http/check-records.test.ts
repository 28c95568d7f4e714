/**
 * Where double-count records live: a private field on a direct class instance, a WeakMap for any
 * other marker. Either way the marker looks the same to the app, and the records chain newest first.
 */
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../limiter/index.js';
import type { Decision } from '../types.js';
import { addCheck, checksOf } from './check-records.js';

const limiter = createLimiter({ policies: [{ name: 'api', limit: 1, window: 60_000 }] });
const decision = Promise.resolve({ allowed: true } as Decision);

class RequestLike {
  readonly method = 'GET';
}
/** Like Express's `req`: an object whose prototype is swapped for the app's, not a class's own. */
const expressLike = (): object =>
  Object.setPrototypeOf({ method: 'GET' }, Object.create(RequestLike.prototype));

const markers: [string, () => object][] = [
  ['a direct class instance', () => new RequestLike()],
  ['an object with a swapped prototype', expressLike],
  ['a plain object', () => ({ method: 'GET' })],
  ["an object made from a plain prototype, like Koa's ctx", () => Object.create(Object.create({ app: {} }))],
  ['a frozen class instance', () => Object.freeze(new RequestLike())],
  ['an object without a prototype', () => Object.create(null) as object],
];

describe.each(markers)('check records on %s', (_name, make) => {
  it('finds nothing before a check, then every check newest first', () => {
    const marker = make();
    expect(checksOf(marker)).toBeUndefined();
    addCheck(marker, limiter, '*', decision);
    addCheck(marker, limiter, 'burst', decision);
    const newest = checksOf(marker);
    expect(newest?.policySet).toBe('burst');
    expect(newest?.next?.policySet).toBe('*');
    expect(newest?.next?.next).toBeUndefined();
    expect(checksOf(make())).toBeUndefined();
  });

  it('leaves the marker as the app sees it: no own key, no change of shape', () => {
    const marker = make();
    const before = Reflect.ownKeys(marker);
    const extensible = Object.isExtensible(marker);
    addCheck(marker, limiter, '*', decision);
    expect(Reflect.ownKeys(marker)).toEqual(before);
    expect(Object.isExtensible(marker)).toBe(extensible);
    expect(JSON.stringify(marker)).toBe(JSON.stringify(make()));
  });
});

it('keeps the older records when a marker moves from the WeakMap to a field', () => {
  const marker: object = { method: 'GET' };
  addCheck(marker, limiter, 'first', decision);
  Object.setPrototypeOf(marker, RequestLike.prototype);
  addCheck(marker, limiter, 'second', decision);
  expect(checksOf(marker)?.policySet).toBe('second');
  expect(checksOf(marker)?.next?.policySet).toBe('first');
});
