/**
 * The checks made so far per request marker (double-count protection). On a marker that is a
 * direct instance of a class (Hono's `Context`, Fastify's request) or a plain object (Koa's `ctx`)
 * they are kept in a private field only this module can read: such objects of one framework share
 * one hidden class, so the field costs one cached transition, and it is cheaper than a WeakMap
 * entry (see bench/README.md). Any other marker keeps them beside it in a WeakMap: Express's
 * `req`, whose prototype is swapped on every request, would get a hidden class of its own per
 * field (23-27k instructions), and a frozen or sealed object cannot take one. The marker's own properties, `for...in` and `Object.keys` over it stay
 * as they were.
 */
import type { Limiter } from '../limiter/limiter.js';
import type { Decision } from '../types.js';

/** One check made for a request marker: a list, usually of one entry. */
export interface CheckRecord {
  readonly limiter: Limiter;
  readonly policySet: string;
  readonly decision: Promise<Decision>;
  readonly next: CheckRecord | undefined;
}

/** A constructor that returns the object it is given, so a subclass can add a private field to it. */
const ReturnGiven = function (this: unknown, target: object) {
  return target;
} as unknown as new (
  target: object,
) => object;

/**
 * Holds the records in a private field of the marker itself: reading and writing it costs less
 * than a WeakMap (measured in bench/README.md), and no code outside this class can see it.
 */
class CheckStamp extends ReturnGiven {
  #checks: CheckRecord | undefined;

  static read(marker: object): CheckRecord | undefined {
    return #checks in marker ? (marker as CheckStamp).#checks : undefined;
  }

  /** False when the marker does not take the field (see `takesField`). */
  static write(marker: object, record: CheckRecord): boolean {
    if (!(#checks in marker)) {
      if (!takesField(marker)) return false;
      new CheckStamp(marker);
    }
    (marker as CheckStamp).#checks = record;
    return true;
  }
}

/**
 * True for an extensible object that is what its constructor made it: a direct instance of its
 * class (its prototype is the class's), or an object whose constructor is `Object` whatever it
 * inherits from (Koa's `ctx`, made by `Object.create(app.context)`). False for an instance whose
 * prototype was swapped for another object (Express's `req` and `res`).
 */
function takesField(marker: object): boolean {
  if (!Object.isExtensible(marker)) return false;
  const proto: unknown = Object.getPrototypeOf(marker);
  if (proto === null) return false;
  const ctor = (proto as { constructor?: unknown }).constructor;
  return ctor === Object || (typeof ctor === 'function' && ctor.prototype === proto);
}

/** The records of markers that do not take the field. */
const recordsBeside = new WeakMap<object, CheckRecord>();

/** The newest record for `marker` (its `next` leads to the older ones), or undefined. */
export function checksOf(marker: object): CheckRecord | undefined {
  return CheckStamp.read(marker) ?? recordsBeside.get(marker);
}

/** Records one more check for `marker`, in front of the ones before it. */
export function addCheck(
  marker: object,
  limiter: Limiter,
  policySet: string,
  decision: Promise<Decision>,
): void {
  const record: CheckRecord = { limiter, policySet, decision, next: checksOf(marker) };
  if (!CheckStamp.write(marker, record)) recordsBeside.set(marker, record);
}

/** The first decision recorded for `marker` with this limiter and policy set, or undefined. */
export function findCheck(
  marker: object,
  limiter: Limiter,
  policySet: string,
): Promise<Decision> | undefined {
  for (let record = checksOf(marker); record !== undefined; record = record.next) {
    if (record.limiter === limiter && record.policySet === policySet) return record.decision;
  }
  return undefined;
}
