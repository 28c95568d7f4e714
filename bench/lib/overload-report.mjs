/** The overload suite's results (suites/overload.mjs) as Markdown: the cost table and the lateness table. */
import { fmtRange, fmtRate, table } from './stats.mjs';

const ms = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/** The overload section of a report: lines of Markdown. */
export function renderOverloadMarkdown(overload) {
  const out = ['## Concurrency and waiting (in-process)', ''];
  out.push(
    `\`limiter.check()\` with ${overload.concurrency} checks in flight over 10k identities, the cases side by side in ${overload.rounds} rounds of ${overload.durationMs} ms (order rotated); each case's decisions/s over the plain rate check's in the same round (median, spread), and the CPU per decision (this process, plus Redis's) over the rate check's.`,
    '',
    table(
      [
        'store',
        'case',
        'decisions/s',
        'CPU µs / decision',
        'Redis CPU µs / decision',
        'vs rate (spread)',
        'CPU vs rate',
        'denied',
      ],
      overload.costs.map((r) => [
        r.store,
        r.name,
        fmtRate(r.perSecond),
        r.cpuUs.toFixed(2),
        r.redisCpuUs === undefined ? '' : r.redisCpuUs.toFixed(2),
        `${r.vsRate.median.toFixed(2)}x (${fmtRange(r.vsRate)})`,
        `${r.cpuVsRate.toFixed(2)}x`,
        String(r.denied),
      ]),
    ),
    '',
    `Lateness of waiting checks: \`queued\` (burst 5, 10/s, maxWaitMs 1000), ${overload.perIdentity} checks of each of ${overload.lateIdentities} identities sent at once per round; lateness = admitted time - turn (real clock), over the checks that waited, with the turn counted from the send (on Redis it includes the store's answer behind the burst) and from the identity's first admission (on Redis, the wait's own precision; on MemoryStore, which answers at the send, the first admission resolves after the whole burst is decided, so there it reads negative and the send is the reference). Admitted can exceed the expected count by a few when the clock moves on while a burst is sent. Early: admissions before their turn (must be 0), with the earliest's lateness.`,
    '',
    table(
      [
        'store',
        'checks',
        'admitted (expected)',
        'denied',
        'waited',
        'from the send: p50 / p99 / max ms',
        'from the first admission: p50 / p99 / max ms',
        'early',
      ],
      overload.lateness.map((l) => [
        l.store,
        String(l.checks),
        `${l.admitted} (${l.expectedAdmitted})`,
        String(l.denied),
        String(l.waited),
        `${ms(l.p50Ms)} / ${ms(l.p99Ms)} / ${ms(l.maxMs)}`,
        `${ms(l.fromFirst.p50Ms)} / ${ms(l.fromFirst.p99Ms)} / ${ms(l.fromFirst.maxMs)}`,
        l.early === 0 ? '0' : `${l.early} (earliest ${ms(l.earliestMs)})`,
      ]),
    ),
  );
  return out;
}
