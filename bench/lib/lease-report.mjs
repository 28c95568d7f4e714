/** The HTTP suite's lease comparisons: their groups, their rows' labels and a Markdown table of them. */
import { fmtRange, fmtRate } from './stats.mjs';

/** The allowed path's key distributions the lease comparisons run (http-server.mjs). */
export const LEASE_KEYS = ['uniform', 'zipf', 'hot'];

const LEASED = 'sluice leased allowed';
const MEMORY = 'sluice memory allowed';
const REDIS = 'sluice redis allowed';
const USUAL = 'usual redis allowed';

/**
 * One group per key distribution: the leased server beside the same adapter on the memory store,
 * on Redis without a lease and the usual limiter on Redis (with the baseline, back to back), and
 * the leased server's throughput over each of theirs (`vsMemory`, `vsRedis`, `vsUsual`).
 */
export const LEASE_GROUPS = LEASE_KEYS.map((keys) => ({
  names: [LEASED, MEMORY, REDIS, USUAL],
  keys,
  lease: true,
  ratios: [
    [LEASED, MEMORY, 'vsMemory'],
    [LEASED, USUAL, 'vsUsual'],
    [LEASED, REDIS, 'vsRedis'],
  ],
}));

/** The row label of a server in a lease comparison: its name and the key distribution. */
export function leaseRowLabel(name, keys) {
  return `${name} (${keys} keys)`;
}

const ratio = (s) => (s ? `${s.median.toFixed(2)}x (${fmtRange(s)})` : 'n/a');
const calls = (v) => (v === undefined || !Number.isFinite(v) ? 'n/a' : v.toPrecision(3));

/**
 * The lease comparisons of an HTTP run as a Markdown table: per framework and key distribution,
 * the leased server's req/s, its ratios (median and spread over rounds) and script calls Redis
 * ran per 2xx answer for it, for Sluice on Redis unleased and for the usual limiter.
 */
export function renderLeaseMarkdown(rows) {
  const find = (framework, name, keys) =>
    rows.find((r) => r.framework === framework && r.name === leaseRowLabel(name, keys) && !r.pending);
  const out = [
    '| framework | keys | leased req/s | leased / Sluice memory (>= 0.95) | leased / usual Redis (>= 1.5) | leased / Sluice Redis | script calls per 2xx: leased / Sluice Redis / usual | server CPU µs/req: leased / memory / Redis | Redis CPU µs/req: leased / Sluice Redis | leased status codes |',
    '| --- | --- | ---: | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const framework of [...new Set(rows.map((r) => r.framework))]) {
    for (const keys of LEASE_KEYS) {
      const leased = find(framework, LEASED, keys);
      if (leased === undefined) continue;
      const memory = find(framework, MEMORY, keys);
      const redis = find(framework, REDIS, keys);
      const usual = find(framework, USUAL, keys);
      const us = (r, field) => (r ? r[field].toFixed(1) : 'n/a');
      out.push(
        `| ${framework} | ${keys} | ${fmtRate(leased.perSecond)} | ${ratio(leased.vsMemory)} | ${ratio(leased.vsUsual)} | ${ratio(leased.vsRedis)} | ${calls(leased.scriptCallsPer2xx)} / ${calls(redis?.scriptCallsPer2xx)} / ${calls(usual?.scriptCallsPer2xx)} | ${us(leased, 'serverUsPerRequest')} / ${us(memory, 'serverUsPerRequest')} / ${us(redis, 'serverUsPerRequest')} | ${us(leased, 'redisUsPerRequest')} / ${us(redis, 'redisUsPerRequest')} | ${Object.entries(
          leased.codes,
        )
          .map(([c, n]) => `${c}: ${n}`)
          .join(', ')} |`,
      );
    }
  }
  return `${out.join('\n')}\n`;
}

/**
 * The lease targets of one framework, for report.mjs's `add`: on hot keys (where a lease is meant
 * to pay), the leased server >= 0.95 of the same adapter on the memory store and >= 1.5x the
 * usual limiter on Redis, and at most 1.2 / 100 (the lease's units) script calls per 2xx.
 */
export function leaseTargets(rows, framework, usual) {
  const leased = rows.find(
    (r) => r.framework === framework && r.name === leaseRowLabel(LEASED, 'hot') && !r.pending,
  );
  const target = (what) => `${framework}: allowed, hot key, leased ${what}`;
  return [
    {
      area: 'HTTP leases',
      target: target('>= 0.95 of Sluice memory'),
      value: leased?.vsMemory?.median,
      goal: 0.95,
      spread: fmtRange(leased?.vsMemory),
    },
    {
      area: 'HTTP leases',
      target: target(`>= 1.5x ${usual} Redis`),
      value: leased?.vsUsual?.median,
      goal: 1.5,
      spread: fmtRange(leased?.vsUsual),
    },
    {
      area: 'HTTP leases',
      target: target('script calls per 2xx <= 1.2/units (0.012)'),
      value: leased?.scriptCallsPer2xx,
      goal: 0.012,
      lower: true,
      format: (v) => v.toFixed(4),
    },
  ];
}
