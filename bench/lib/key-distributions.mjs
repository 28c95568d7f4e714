/**
 * Which identity each request of an open-loop run carries: `uniform` over N identities, `hot`
 * (one identity for every request) or `zipf` (rank k drawn with weight 1 / k^s, so a few tenants
 * send most of the traffic, as a hot enterprise tenant does). Deterministic: a seeded PRNG
 * fills a table of identity indexes once, and request i takes entry i mod the table's length.
 */

/** The names of the distributions `keySequence` knows. */
export const DISTRIBUTIONS = ['uniform', 'hot', 'zipf'];

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Cumulative Zipf weights of ranks 1..n with exponent s, normalized to end at 1. */
function zipfCdf(n, s) {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k++) {
    sum += 1 / k ** s;
    cdf[k - 1] = sum;
  }
  for (let k = 0; k < n; k++) cdf[k] /= sum;
  return cdf;
}

/** The first index whose cumulative weight reaches u (binary search). */
function rankAt(cdf, u) {
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A table of identity indexes (0..identities-1) for `distribution`, `length` entries long.
 * `zipfExponent` (default 1.1) only matters for `zipf`.
 * @returns {Uint32Array}
 */
export function keySequence(distribution, { identities, length = 1 << 16, seed = 1, zipfExponent = 1.1 }) {
  if (!DISTRIBUTIONS.includes(distribution))
    throw new Error(`key distribution must be one of ${DISTRIBUTIONS.join(', ')}, got ${distribution}`);
  if (!Number.isInteger(identities) || identities < 1)
    throw new Error(`identities must be a positive integer, got ${identities}`);
  const table = new Uint32Array(length);
  if (distribution === 'hot') return table;
  const random = prng(seed);
  if (distribution === 'uniform') {
    for (let i = 0; i < length; i++) table[i] = Math.floor(random() * identities);
    return table;
  }
  const cdf = zipfCdf(identities, zipfExponent);
  for (let i = 0; i < length; i++) table[i] = rankAt(cdf, random());
  return table;
}

/** The share of requests that carry the most frequent identity of a sequence (0..1). */
export function hottestShare(sequence) {
  const counts = new Map();
  let best = 0;
  for (const k of sequence) {
    const c = (counts.get(k) ?? 0) + 1;
    counts.set(k, c);
    if (c > best) best = c;
  }
  return sequence.length === 0 ? 0 : best / sequence.length;
}
