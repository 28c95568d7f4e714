/**
 * Test support: sequences of quota operations (reports, departures, time passing) as fast-check
 * arbitraries, and a runner over any `QuotaTable`-like step function.
 */
import fc from 'fast-check';

/** One operation on a bucket: a client reports, a client leaves, or time passes. */
export type QuotaOp =
  | { readonly kind: 'report'; readonly client: number; readonly demand: number; readonly ttlMs: number }
  | { readonly kind: 'leave'; readonly client: number }
  | { readonly kind: 'wait'; readonly ms: number };

/** Operations on up to `clients` clients, demands up to `maxDemand`, TTLs from 100 ms to 5 s. */
export function quotaOps(clients: number, maxDemand: number, maxLength: number): fc.Arbitrary<QuotaOp[]> {
  const client = fc.integer({ min: 0, max: clients - 1 });
  const op: fc.Arbitrary<QuotaOp> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('report' as const),
        client,
        demand: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: maxDemand })),
        ttlMs: fc.integer({ min: 100, max: 5000 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('leave' as const), client }) },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 3000 }) }),
    },
  );
  return fc.array(op, { minLength: 1, maxLength });
}

/** A client id of the runs (ids never hold anything but this). */
export const clientName = (client: number): string => `client-${client}`;
