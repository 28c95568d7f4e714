/**
 * The in-process suite's in-flight sweep (suites/inproc.mjs: one token bucket, 10k keys, allowed,
 * at 1, 8, 32 and 256 checks in flight) as targets and Markdown: Sluice's `limiter.check()` against
 * rate-limiter-flexible and the minimal token-bucket script, ratios taken within each round.
 */
import { fmtRange, fmtRate, spread, table } from './stats.mjs';

/** Sluice over rate-limiter-flexible in decisions/s, per in flight (issue targets). */
const THROUGHPUT_GOALS = { 8: 1.2, 32: 1.5, 256: 2 };
/** Sluice's Redis CPU per decision over rate-limiter-flexible's, at most (per in flight). */
const REDIS_CPU_GOALS = { 8: 0.8, 32: 0.6, 256: 0.6 };
/** An unbatched Sluice call of a plain token bucket over the minimal script's, in Redis time per call. */
const UNBATCHED_GOAL = 2;

/** The sweep's groups: `{ inFlight, sluice, rlf, minimal }` rows, in the order run. */
export function sweepOf(inproc) {
  const rows = (inproc?.results ?? []).filter((r) => r.inFlight !== undefined && !r.pending);
  const groups = [];
  for (const inFlight of [...new Set(rows.map((r) => r.inFlight))]) {
    const of = (library) => rows.find((r) => r.inFlight === inFlight && r.library === library && !r.variant);
    groups.push({ inFlight, sluice: of('sluice'), rlf: of('rlf'), minimal: of('minimal') });
  }
  return groups;
}

/** Per-round ratios of a field of two rows (same round, same group): `{ median, min, max, n }`. */
function roundRatios(a, b, field) {
  if (!a?.[field] || !b?.[field]) return undefined;
  const n = Math.min(a[field].length, b[field].length);
  const ratios = [];
  for (let i = 0; i < n; i++) ratios.push(a[field][i] / b[field][i]);
  return ratios.length > 0 ? spread(ratios) : undefined;
}

/** The in-flight targets: `{ area, target, value, goal, lower?, spread }` (the caller marks them met). */
export function inFlightTargets(inproc) {
  const targets = [];
  for (const { inFlight, sluice, rlf, minimal } of sweepOf(inproc)) {
    const goal = THROUGHPUT_GOALS[inFlight];
    if (goal !== undefined) {
      const s = roundRatios(sluice, rlf, 'perRound');
      targets.push({
        area: 'in flight',
        target: `token bucket, ${inFlight} in flight: decisions/s >= ${goal}x rate-limiter-flexible`,
        value: s?.median,
        goal,
        spread: s && s.n > 1 ? fmtRange(s) : '',
      });
    }
    const cpuGoal = REDIS_CPU_GOALS[inFlight];
    if (cpuGoal !== undefined) {
      const s = roundRatios(sluice, rlf, 'redisCpuPerRound');
      targets.push({
        area: 'in flight',
        target: `token bucket, ${inFlight} in flight: Redis CPU per decision <= ${cpuGoal}x rate-limiter-flexible's`,
        value: s?.median,
        goal: cpuGoal,
        lower: true,
        spread: s && s.n > 1 ? fmtRange(s) : '',
      });
    }
    if (inFlight === 1) {
      const p50 = roundRatios(sluice, rlf, 'p50PerRound');
      targets.push({
        area: 'in flight',
        target: 'token bucket, 1 in flight: p50 latency <= rate-limiter-flexible (ratio)',
        value: p50?.median,
        goal: 1,
        lower: true,
        spread: p50 && p50.n > 1 ? fmtRange(p50) : '',
      });
      const call = roundRatios(sluice, minimal, 'redisUsPerCallPerRound');
      targets.push({
        area: 'in flight',
        target: `token bucket, unbatched (1 in flight): Redis µs per call <= ${UNBATCHED_GOAL}x the minimal token-bucket script`,
        value: call?.median,
        goal: UNBATCHED_GOAL,
        lower: true,
        spread: call && call.n > 1 ? fmtRange(call) : '',
      });
    }
  }
  return targets;
}

const fixed = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '');

/** The in-flight section of a report: lines of Markdown (none without a sweep). */
export function renderInFlightMarkdown(inproc) {
  const groups = sweepOf(inproc);
  if (groups.length === 0) return [];
  const rows = [];
  for (const { inFlight, sluice, rlf, minimal } of groups) {
    for (const r of [sluice, rlf, minimal]) {
      if (r === undefined) continue;
      const vs = r === rlf ? undefined : roundRatios(r, rlf, 'perRound');
      const cpu = r === rlf ? undefined : roundRatios(r, rlf, 'redisCpuPerRound');
      rows.push([
        String(inFlight),
        r.library,
        fmtRate(r.perSecond),
        vs ? `${vs.median.toFixed(2)}x (${fmtRange(vs)})` : '',
        `${fixed(r.p50Us / 1000, 3)} / ${fixed(r.p99Us / 1000, 3)}`,
        fixed(r.cpuUsPerOp),
        fixed(r.redisCpuUsPerOp),
        cpu ? `${cpu.median.toFixed(2)}x` : '',
        fixed(r.redisUsPerCall),
        fixed(r.callsPerOp, 3),
      ]);
    }
  }
  return [
    '## In flight: one token bucket at 1, 8, 32 and 256 checks in flight',
    '',
    `\`limiter.check()\` (one token-bucket policy, 10k uniform keys, allowed) beside rate-limiter-flexible's \`RateLimiterRedis.consume\` and the minimal token-bucket script (HMGET, the arithmetic, HSET + PEXPIRE; raw EVALSHA), ${inproc.rounds} rounds of ${inproc.durationMs} ms per in-flight setting, order rotated; ratios within each round, median (spread). Redis CPU: INFO cpu over the round, warm-up included, per decision started.`,
    '',
    table(
      [
        'in flight',
        'library',
        'decisions/s',
        'vs rlf (spread)',
        'p50 / p99 ms',
        'client CPU µs/decision',
        'Redis CPU µs/decision',
        'Redis CPU vs rlf',
        'Redis µs/script call',
        'script calls/decision',
      ],
      rows,
    ),
    '',
  ];
}
