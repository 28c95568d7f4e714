/**
 * Policies chosen per request against fixed ones, in-process: `limitRequest` of core's HTTP
 * handler (what every adapter calls) with the memory store, 10k identities, allowed path.
 * Four handlers, measured alternately in one run (order rotated each round), CPU time of this
 * process per request (`process.cpuUsage`):
 *   fixed names      `{ limiter, policies: ['pro'] }`
 *   chosen names     `{ limiter, policies: (req) => plan(req) }` (two plans)
 *   fixed limit      `{ limit: 10, window: '1m' }`
 *   chosen limit     `{ limit: (req) => plan limit, window: '1m' }` (two limits, compiled once each)
 * The ratios chosen / fixed say what choosing per request costs; a compile per request (a new
 * limiter each time) would cost tens of times a check, so a ratio near 1 shows there is none.
 *
 *   node bench/suites/per-request.mjs [--requests 200000] [--rounds 5]
 */
import { parseArgs } from 'node:util';
import { loadSluice } from '../lib/sluice.mjs';

const { values: opts } = parseArgs({
  options: {
    requests: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '5' },
  },
});
const requests = Number(opts.requests);
const rounds = Number(opts.rounds);

const { core, missing } = await loadSluice();
if (missing.includes('createLimiter') || typeof core.createRateLimitHandler !== 'function') {
  console.log('per-request: pending (build @sluice/core first)');
  process.exit(0);
}

const PLANS = [
  { name: 'pro', algorithm: 'fixed-window', limit: 1e9, window: '1m' },
  { name: 'free', algorithm: 'fixed-window', limit: 1e9, window: '1m' },
];
const reqs = Array.from({ length: 10_000 }, (_, i) => ({ id: `tenant-${i}`, pro: i % 2 === 0 }));
const PRO = ['pro'];
const FREE = ['free'];
const identity = (req) => req.id;
const handlers = {
  'fixed names': core.createRateLimitHandler(
    { limiter: core.createLimiter({ policies: PLANS }), policies: ['pro'], identity },
    'bench',
  ),
  'chosen names': core.createRateLimitHandler(
    { limiter: core.createLimiter({ policies: PLANS }), policies: (req) => (req.pro ? PRO : FREE), identity },
    'bench',
  ),
  'fixed limit': core.createRateLimitHandler({ limit: 1e9, window: '1m', identity }, 'bench'),
  'chosen limit': core.createRateLimitHandler(
    { limit: (req) => (req.pro ? 1e9 : 5e8), window: '1m', identity },
    'bench',
  ),
};
const facts = { method: 'GET', path: '/items', ip: '127.0.0.1' };

/** CPU µs per request of `requests` sequential limitRequest calls (fresh request objects). */
async function measure(handler) {
  const start = process.cpuUsage();
  for (let i = 0; i < requests; i++) {
    const base = reqs[i % reqs.length];
    const result = await handler.limitRequest({ id: base.id, pro: base.pro }, facts);
    if (!result.decision.allowed) throw new Error('denied: the bench expects the allowed path');
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / requests;
}

const names = Object.keys(handlers);
const samples = Object.fromEntries(names.map((n) => [n, []]));
for (const name of names) await measure(handlers[name]); // warm-up
for (let r = 0; r < rounds; r++) {
  const order = names.slice(r % names.length).concat(names.slice(0, r % names.length));
  for (const name of order) samples[name].push(await measure(handlers[name]));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const name of names)
  console.log(`${name.padEnd(14)} ${median(samples[name]).toFixed(3)} µs/request (CPU)`);
console.log(
  `chosen names / fixed names: ${(median(samples['chosen names']) / median(samples['fixed names'])).toFixed(3)}`,
);
console.log(
  `chosen limit / fixed limit: ${(median(samples['chosen limit']) / median(samples['fixed limit'])).toFixed(3)}`,
);
