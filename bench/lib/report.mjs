/**
 * Turns suite outputs into bench/results/results.md (markdown tables, targets met/missed) and
 * bench/results/chart.svg (a hand-written bar chart of the target ratios).
 */
import { inFlightTargets, renderInFlightMarkdown } from './in-flight-report.mjs';
import { leaseTargets, renderLeaseMarkdown } from './lease-report.mjs';
import { renderOverloadMarkdown } from './overload-report.mjs';
import { fmtRange, fmtRate, fmtRatio, median, spread, table } from './stats.mjs';

const ALGORITHMS = ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log'];

function find(rows, where) {
  return rows.find((r) => Object.entries(where).every(([k, v]) => r[k] === v) && !r.pending);
}

/** Median over rounds of a.perRound[i] / b.perRound[i] (same round, same group). */
function roundRatio(a, b) {
  if (!a || !b) return Number.NaN;
  const n = Math.min(a.perRound.length, b.perRound.length);
  const ratios = [];
  for (let i = 0; i < n; i++) ratios.push(a.perRound[i] / b.perRound[i]);
  return median(ratios);
}

function ratioRange(a, b) {
  if (!a || !b) return '';
  const n = Math.min(a.perRound.length, b.perRound.length);
  const ratios = [];
  for (let i = 0; i < n; i++) ratios.push(a.perRound[i] / b.perRound[i]);
  if (ratios.length < 2) return '';
  return fmtRange(spread(ratios));
}

/** Every target of issue 6 with its measured value: `{ area, target, measured, value, goal, met, note }`. */
export function evaluateTargets({ inproc, http, memory }) {
  const targets = [];
  const add = (t) =>
    targets.push({
      ...t,
      met: Number.isFinite(t.value) ? (t.lower ? t.value <= t.goal : t.value >= t.goal) : undefined,
    });
  const ip = inproc?.results ?? [];
  for (const algorithm of ALGORITHMS) {
    const g1 = `${algorithm} 1 policy, 10k keys, allowed`;
    const sluice1 = find(ip, { group: g1, library: 'sluice', algorithm, variant: undefined });
    const floor1 = find(ip, { group: g1, library: 'floor', variant: undefined });
    const rlf1 = find(ip, { group: g1, library: 'rlf' });
    add({
      area: 'check()',
      target: `${algorithm}: 1 policy >= 1.0x raw EVALSHA floor`,
      value: roundRatio(sluice1, floor1),
      goal: 1.0,
      spread: ratioRange(sluice1, floor1),
    });
    add({
      area: 'check()',
      target: `${algorithm}: 1 policy >= 1.3x rate-limiter-flexible`,
      value: roundRatio(sluice1, rlf1),
      goal: 1.3,
      spread: ratioRange(sluice1, rlf1),
    });
    const g2 = `${algorithm} 2 policies, 10k keys, allowed`;
    const sluice2 = find(ip, { group: g2, library: 'sluice', policies: 2 });
    const sluice2one = find(ip, { group: g2, library: 'sluice', policies: 1 });
    add({
      area: 'check()',
      target: `${algorithm}: 2 policies >= 0.9x 1 policy`,
      value: roundRatio(sluice2, sluice2one),
      goal: 0.9,
      spread: ratioRange(sluice2, sluice2one),
    });
    const g5 = `${algorithm} 1 policy, hot key, denied`;
    const cached = find(ip, { group: g5, library: 'sluice', variant: undefined });
    const floorDenied = find(ip, { group: g5, library: 'floor', variant: undefined });
    add({
      area: 'check()',
      target: `${algorithm}: hot key denied, deny cache >= 10x floor`,
      value: roundRatio(cached, floorDenied),
      goal: 10,
      spread: ratioRange(cached, floorDenied),
    });
  }
  for (const t of inFlightTargets(inproc)) add(t);
  const deniedAdmits = ip.filter(
    (r) => r.library === 'sluice' && r.path === 'denied' && r.allowedShare !== undefined,
  );
  if (deniedAdmits.length > 0) {
    const worst = Math.max(...deniedAdmits.map((r) => r.allowedShare));
    add({
      area: 'check()',
      target: 'deny cache never admits what Redis denies (share admitted on denied paths = 0)',
      value: worst,
      goal: 0,
      lower: true,
      format: (v) => `${(v * 100).toFixed(3)}%`,
    });
  }
  for (const rt of inproc?.roundTrips ?? []) {
    if (rt.library !== 'sluice' || rt.pending) continue;
    targets.push({
      area: 'round trips',
      target: `${rt.algorithm}, ${rt.policies} ${rt.policies === 1 ? 'policy' : 'policies'}: exactly 1 Redis command per decision (one at a time; at most 1 when batched)`,
      value: rt.perDecision,
      goal: 1,
      met: rt.perDecision === 1 && (rt.concurrentPerDecision ?? 1) <= 1,
      format: (v) => v.toFixed(3),
    });
  }
  for (const fw of ['express', 'koa', 'hono', 'nest', 'fastify']) {
    const rows = (http?.rows ?? []).filter((r) => r.framework === fw && !r.pending);
    const s = (store, path) =>
      rows.find(
        (r) =>
          r.variant === 'sluice' &&
          !r.autopipelining &&
          !r.lease &&
          r.group !== 'lease' &&
          r.store === store &&
          r.path === path,
      );
    const red = s('redis', 'allowed');
    add({
      area: 'HTTP',
      target: `${fw}: allowed, Redis >= 0.80 of baseline`,
      value: red?.vsBaseline?.median,
      goal: 0.8,
      spread: fmtRange(red?.vsBaseline),
    });
    // Fastify's target (issue 31): 1.2x @fastify/rate-limit on Redis, allowed and denied.
    const vsUsualGoal = fw === 'fastify' ? 1.2 : 1.3;
    add({
      area: 'HTTP',
      target: `${fw}: allowed, Redis >= ${vsUsualGoal}x ${usualName(fw)}`,
      value: red?.vsUsual?.median,
      goal: vsUsualGoal,
      spread: fmtRange(red?.vsUsual),
    });
    // The deny path against the usual limiter: Fastify's 1.2x (issue 31), every other framework's
    // at least as fast (issue: fast at every concurrency).
    const denied = s('redis', 'deny');
    const deniedGoal = fw === 'fastify' ? vsUsualGoal : 1.0;
    add({
      area: 'HTTP',
      target: `${fw}: deny path, Redis >= ${deniedGoal}x ${usualName(fw)}`,
      value: denied?.vsUsual?.median,
      goal: deniedGoal,
      spread: fmtRange(denied?.vsUsual),
    });
    for (const store of ['redis', 'memory']) {
      const d = s(store, 'deny');
      add({
        area: 'HTTP',
        target: `${fw}: deny path (${store}) >= 0.95 of baseline`,
        value: d?.vsBaseline?.median,
        goal: 0.95,
        spread: fmtRange(d?.vsBaseline),
      });
    }
    if (rows.some((r) => r.lease)) for (const t of leaseTargets(rows, fw, usualName(fw))) add(t);
  }
  const mem = (name) => (memory?.rows ?? []).find((r) => r.name === name && !r.pending);
  const gcra = mem('sluice gcra');
  const tb = mem('sluice token-bucket');
  add({
    area: 'memory',
    target: "GCRA bytes per key <= 56 (a plain counter under the anchors' short keys)",
    value: gcra?.bytes,
    goal: 56,
    lower: true,
    format: (v) => `${v} B`,
  });
  const counter = mem('plain counter (INCR + PEXPIRE)');
  if (counter) {
    add({
      area: 'memory',
      target: `GCRA bytes per key <= a plain counter on the same key (${counter.bytes} B)`,
      value: gcra?.bytes,
      goal: counter.bytes,
      lower: true,
      format: (v) => `${v} B`,
    });
  }
  add({
    area: 'memory',
    target: 'token bucket bytes per key <= 104',
    value: tb?.bytes,
    goal: 104,
    lower: true,
    format: (v) => `${v} B`,
  });
  return targets;
}

function usualName(fw) {
  return {
    express: 'express-rate-limit + rate-limit-redis',
    koa: 'koa-ratelimit',
    hono: 'hono-rate-limiter',
    nest: '@nestjs/throttler',
    fastify: '@fastify/rate-limit',
  }[fw];
}

function fmtValue(t) {
  if (!Number.isFinite(t.value)) return 'pending';
  return t.format ? t.format(t.value) : fmtRatio(t.value);
}

/** The markdown report. */
export function renderMarkdown({
  meta,
  inproc,
  http,
  memory,
  overhead,
  scriptCost,
  churn,
  overload,
  targets,
}) {
  const out = [];
  out.push('# Sluice benchmark results', '');
  out.push(
    `${meta.date} · ${meta.mode} run · \`${meta.command}\` · Node ${meta.node} · ${meta.redis} · ${meta.cpus} CPUs (${meta.cpuModel}) · ${meta.seconds} s · 1-minute load average ${meta.loadAverage}`,
    '',
    'Redis, the servers and the load generator share the machine, so absolute numbers only describe this run; the ratios (taken within one round, medians over rounds, spread = min-max over rounds) are what compare.',
    '',
  );
  out.push('## Targets', '');
  const met = targets.filter((t) => t.met === true).length;
  const missed = targets.filter((t) => t.met === false).length;
  out.push(`${met} met, ${missed} missed, ${targets.length - met - missed} pending.`, '');
  out.push(
    table(
      ['area', 'target', 'measured', 'spread', 'result'],
      targets.map((t) => [
        t.area,
        t.target,
        fmtValue(t),
        t.spread ?? '',
        t.met === undefined ? 'pending' : t.met ? 'met' : '**missed**',
      ]),
    ),
    '',
  );
  const experiments = [];
  if (inproc) {
    const g1 = 'token-bucket 1 policy, 10k keys, allowed';
    const ip = inproc.results;
    const sluicePipe = find(ip, { group: g1, library: 'sluice', variant: 'autopipelining' });
    const floorPipe = find(ip, { group: g1, library: 'floor', variant: 'autopipelining' });
    const sluice = find(ip, { group: g1, library: 'sluice', variant: undefined });
    const floor = find(ip, { group: g1, library: 'floor', variant: undefined });
    const rlf = find(ip, { group: g1, library: 'rlf' });
    const row = (what, a, b) => experiments.push([what, fmtRatio(roundRatio(a, b)), ratioRange(a, b)]);
    row('check() token bucket, auto-pipelined client / raw EVALSHA floor', sluicePipe, floor);
    row('check() token bucket, auto-pipelined client / rate-limiter-flexible', sluicePipe, rlf);
    row('check() token bucket, auto-pipelined client / default client', sluicePipe, sluice);
    row('floor with auto-pipelining / floor', floorPipe, floor);
  }
  for (const r of http?.rows ?? []) {
    if (!r.autopipelining || r.pending || !r.vsBaseline) continue;
    experiments.push([
      `HTTP ${r.framework}, Sluice Redis allowed, auto-pipelined client / baseline`,
      fmtRatio(r.vsBaseline.median),
      fmtRange(r.vsBaseline),
    ]);
    if (r.vsUsual)
      experiments.push([
        `HTTP ${r.framework}, Sluice Redis allowed, auto-pipelined client / ${usualName(r.framework)}`,
        fmtRatio(r.vsUsual.median),
        fmtRange(r.vsUsual),
      ]);
  }
  if (experiments.length > 0) {
    out.push('## Experiments (not targets): ioredis auto-pipelining', '');
    out.push(
      "The same cases with `enableAutoPipelining: true` on the ioredis client (`createRedisStore(url, { redisOptions: { enableAutoPipelining: true } })`), which writes every command issued in one event-loop tick in one socket write. Not Sluice's default.",
      '',
    );
    out.push(table(['comparison', 'ratio', 'spread'], experiments), '');
  }
  if (inproc) out.push(...renderInFlightMarkdown(inproc));
  if (inproc) {
    out.push('## In-process: `limiter.check()` against the raw EVALSHA floor and rate-limiter-flexible', '');
    out.push(
      `One Node process, ${inproc.concurrency} decisions in flight, ${inproc.keys} uniform keys or one hot key, ${inproc.rounds} rounds of ${inproc.durationMs} ms per case, alternating within each group. floor = ioredis \`evalsha\` of Sluice's decide script with precomputed KEYS/ARGV (default client); rlf = rate-limiter-flexible RateLimiterRedis (fixed window; two policies = RateLimiterUnion). Sluice uses \`createRedisStore(url)\` with \`timeoutMs: 2000\` (the floor and rlf have no deadline).`,
      '',
    );
    const rows = [];
    for (const r of inproc.results) {
      if (r.pending) {
        rows.push([r.group, label(r), 'pending', '', '', '', '', '', '', '']);
        continue;
      }
      const floor = inproc.results.find(
        (x) =>
          x.group === r.group &&
          x.library === 'floor' &&
          !x.variant &&
          x.policies === r.policies &&
          !x.pending,
      );
      rows.push([
        r.group,
        label(r),
        fmtRate(r.perSecond),
        `${(r.p50Us / 1000).toFixed(2)}`,
        `${(r.p99Us / 1000).toFixed(2)}`,
        floor && floor !== r ? fmtRatio(roundRatio(r, floor)) : '',
        r.allowedShare === undefined ? '' : `${(r.allowedShare * 100).toFixed(1)}%`,
        Number.isFinite(r.cpuUsPerOp) ? r.cpuUsPerOp.toFixed(1) : '',
        Number.isFinite(r.redisUsPerCall) ? r.redisUsPerCall.toFixed(1) : '',
        Number.isFinite(r.redisCpuUsPerOp) ? r.redisCpuUsPerOp.toFixed(1) : '',
      ]);
    }
    out.push(
      table(
        [
          'group',
          'case',
          'decisions/s',
          'p50 ms',
          'p99 ms',
          'vs floor',
          'admitted',
          'client CPU µs/decision',
          'Redis µs/script call',
          'Redis CPU µs/decision',
        ],
        rows,
      ),
      '',
    );
    if (inproc.roundTrips?.length) {
      out.push('### Redis commands per decision', '');
      out.push(
        'Counted by Redis itself: a MONITOR connection sees every client command and marks commands run inside a script as `lua`; those are left out. "one at a time": one decision in flight, so nothing can share a call; "in flight": the in-process concurrency, where Sluice batches the decisions of one event-loop turn into one script call.',
        '',
      );
      out.push(
        table(
          [
            'library',
            'algorithm',
            'policies',
            'decisions',
            'client commands',
            'per decision, one at a time',
            'by command',
            'per decision, in flight',
          ],
          inproc.roundTrips.map((r) =>
            r.pending
              ? [r.library, r.algorithm, String(r.policies), '', '', 'pending', '', '']
              : [
                  r.library,
                  r.algorithm,
                  String(r.policies),
                  String(r.decisions),
                  String(r.commands),
                  r.perDecision.toFixed(3),
                  Object.entries(r.byCommand)
                    .map(([k, v]) => `${k} ${v}`)
                    .join(', '),
                  r.concurrentPerDecision === undefined ? '' : r.concurrentPerDecision.toFixed(3),
                ],
          ),
        ),
        '',
      );
    }
  }
  if (scriptCost?.rows?.length) {
    out.push('## Redis time per decision', '');
    out.push(
      `Microseconds Redis spends per script call (INFO commandstats usec_per_call for EVALSHA, which includes the commands the script runs), ${scriptCost.calls} calls with 64 in flight, median of ${scriptCost.rounds} alternating rounds. Redis runs scripts on one thread: 1e6 / usec bounds decisions per second per Redis, and on a shared machine this CPU competes with the application.`,
      '',
    );
    out.push(
      table(
        ['script', 'µs per call', 'decisions/s bound'],
        scriptCost.rows.map((r) => [r.name, r.usPerCall.toFixed(2), fmtRate(1e6 / r.usPerCall)]),
      ),
      '',
    );
  }
  if (overload?.costs?.length) out.push(...renderOverloadMarkdown(overload), '');
  if (churn?.rows?.length) {
    out.push('## MemoryStore under churn', '');
    out.push(
      `A store filled to maxKeys, then ${churn.churn} more distinct keys checked once each (every one evicting a live key; the Map-ordered reference ${churn.referenceChurn}), µs per check in each tenth of the churn, and the slowest tenth over the fastest, measured in one run.`,
      '',
    );
    out.push(
      table(
        ['store', 'CPU µs per check, each tenth', 'slowest / fastest', 'bytes per key'],
        churn.rows.map((r) => [
          r.name,
          r.usPerCheck.map((u) => u.toFixed(2)).join(' '),
          r.ratio.toFixed(2),
          r.bytesPerKey.toFixed(0),
        ]),
      ),
      '',
    );
  }
  if (overhead?.rows?.length) {
    out.push('## Limiter overhead per check (no network)', '');
    out.push(
      `\`check()\` one at a time against a store that answers at once (or RedisStore replaying a real script reply), ${overhead.iterations} checks per round, median of ${overhead.rounds} rounds: the CPU Sluice's own code adds to each decision.`,
      '',
    );
    out.push(
      table(
        ['case', 'ns per check'],
        overhead.rows.map((r) => [r.name, r.nsPerCheck.toFixed(0)]),
      ),
      '',
    );
  }
  if (http) {
    out.push("## HTTP: adapters against each framework's baseline and usual limiter", '');
    out.push(
      `autocannon, ${http.connections} connections, ${http.rounds} rounds; each round measures every comparison (the baseline, a Sluice server and the usual limiter) back to back for ${http.durationS} s each, order rotated every round, and takes its ratios within that triple: the machine's speed drifts over tens of seconds, so only runs seconds apart compare. GET /limited answering {"ok":true}. Allowed path: a random x-api-key of ${http.identities} per request, quota never reached. Deny path: one identity, 1 request per hour. Sluice uses its default algorithm (token bucket) and default options (100 ms deadline). "empty middleware" is the baseline app with one middleware that only calls next() (Nest: a guard that returns true): what adding any middleware costs. "async empty middleware" awaits one already-resolved promise before next() (Nest: an async guard that resolves to true): the least any limiter that awaits its store pays. "fixed 429 middleware" answers every request with the 429 Sluice's deny path sends (same status, headers and body; Nest: a guard throwing it as an HttpException), deciding nothing: what the deny path's answer alone costs.`,
      '',
      "CPU µs per request (medians over runs): the server process (/proc), Redis (INFO cpu) and the load generator (autocannon, in the bench process). The three share 2 cores, so when the machine is saturated a server reaches about (baseline total / its total) of the baseline's throughput: the totals explain the ratios.",
      '',
    );
    const us = (v) => (Number.isFinite(v) ? v.toFixed(1) : '');
    const ratio = (x) => (x ? `${x.median.toFixed(2)} (${fmtRange(x)})` : '');
    out.push(
      table(
        [
          'framework',
          'server',
          'req/s',
          'p50 ms',
          'p99 ms',
          'vs baseline (spread)',
          'Sluice vs usual (spread)',
          'server CPU µs/request',
          'Redis CPU µs/request',
          'load generator CPU µs/request',
          'total CPU µs/request',
          'status codes',
        ],
        http.rows.map((r) =>
          r.pending
            ? [r.framework, r.name, 'not started', '', '', '', '', '', '', '', '', '']
            : [
                r.framework,
                r.variant === 'usual'
                  ? `${usualName(r.framework)} ${r.store} ${r.path}${r.group === 'lease' ? ` (${r.keys} keys)` : ''}`
                  : r.name,
                fmtRate(r.perSecond),
                String(r.p50Ms),
                String(r.p99Ms),
                ratio(r.vsBaseline),
                ratio(r.vsUsual),
                us(r.serverUsPerRequest),
                r.store === 'redis' && r.variant !== 'baseline' ? us(r.redisUsPerRequest) : '',
                us(r.loadUsPerRequest),
                us(
                  (r.serverUsPerRequest ?? Number.NaN) +
                    (r.store === 'redis' && r.variant !== 'baseline' ? (r.redisUsPerRequest ?? 0) : 0) +
                    (r.loadUsPerRequest ?? Number.NaN),
                ),
                Object.entries(r.codes)
                  .map(([c, n]) => `${c}: ${n}`)
                  .join(', '),
              ],
        ),
      ),
      '',
    );
  }
  if (http?.rows?.some((r) => r.lease && !r.pending)) {
    out.push('## HTTP: leases', '');
    out.push(
      'Sluice on Redis with a leased policy (100 units for 1 s) beside the same adapter on the memory store, on Redis without a lease and the usual limiter on Redis, measured back to back with the baseline in each round, per key distribution of the allowed path. Script calls: INFO commandstats over the 2xx answers of all rounds.',
      '',
      renderLeaseMarkdown(http.rows),
    );
  }
  if (memory) {
    out.push('## Redis memory per key', '');
    out.push(
      `MEMORY USAGE (SAMPLES 0) summed over the keys one identity (\`${memory.identity}\`) leaves after one decision, limit 100 per minute; each library with its own default key layout.`,
      '',
    );
    out.push(
      table(
        ['what', 'bytes', 'keys', 'key length', 'type'],
        memory.rows.map((r) =>
          r.pending
            ? [r.name, 'pending', '', '', '']
            : [r.name, String(r.bytes), String(r.keys), r.keyLengths.join(', '), r.types.join(', ')],
        ),
      ),
      '',
    );
  }
  return `${out.join('\n')}\n`;
}

function label(r) {
  const lib = r.library === 'rlf' ? 'rate-limiter-flexible' : r.library;
  return [lib, r.variant, r.library === 'rlf' ? '' : r.algorithm, `${r.policies}p`, r.keys, r.path]
    .filter(Boolean)
    .join(' ');
}

function esc(s) {
  return String(s).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/**
 * A horizontal bar chart of every ratio target: bar = measured ratio / goal on a log scale
 * (1 = exactly on target), green when met, red when missed. Written by hand: no dependency.
 */
export function renderSvg(targets, title) {
  const bars = targets.filter((t) => Number.isFinite(t.value) && !t.format);
  const rowH = 22;
  const left = 480;
  const width = 980;
  const plotW = width - left - 90;
  const top = 50;
  const height = top + bars.length * rowH + 40;
  // log scale from 0.1x to 10x of the goal
  const minL = Math.log10(0.1);
  const maxL = Math.log10(10);
  const x = (rel) =>
    left + ((Math.min(maxL, Math.max(minL, Math.log10(rel))) - minL) / (maxL - minL)) * plotW;
  const parts = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="100%" height="100%" fill="white"/>`);
  parts.push(`<text x="10" y="20" font-size="15" font-weight="bold">${esc(title)}</text>`);
  parts.push(
    `<text x="10" y="38" fill="#555">measured / target, log scale; the line at 1 is the target (right of it: met)</text>`,
  );
  for (const tick of [0.1, 0.25, 0.5, 1, 2, 4, 10]) {
    const tx = x(tick);
    parts.push(
      `<line x1="${tx}" y1="${top - 4}" x2="${tx}" y2="${top + bars.length * rowH}" stroke="${tick === 1 ? '#000' : '#ddd'}" stroke-width="${tick === 1 ? 1.5 : 1}"/>`,
    );
    parts.push(
      `<text x="${tx}" y="${top + bars.length * rowH + 16}" text-anchor="middle" fill="#555">${tick}</text>`,
    );
  }
  bars.forEach((t, i) => {
    const y = top + i * rowH;
    const rel = t.value / t.goal;
    const x0 = x(1);
    const x1 = x(rel);
    const color = t.met ? '#2e7d32' : '#c62828';
    parts.push(
      `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${esc(`${t.area}: ${t.target}`)}</text>`,
    );
    parts.push(
      `<rect x="${Math.min(x0, x1)}" y="${y + 4}" width="${Math.max(1, Math.abs(x1 - x0))}" height="${rowH - 8}" fill="${color}"/>`,
    );
    parts.push(
      `<text x="${Math.max(x0, x1) + 4}" y="${y + 15}" fill="#333">${esc(`${t.value.toFixed(2)}x`)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
