/** The open-loop suite's report: a Markdown table per framework and an SVG chart of p99 by tier. */

const COLORS = {
  baseline: '#777',
  'sluice-memory': '#1565c0',
  'sluice-redis': '#2e7d32',
  'sluice-leased': '#ef6c00',
  'usual-redis': '#c62828',
};

function esc(s) {
  return String(s).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function fmtMs(ms) {
  if (!Number.isFinite(ms)) return 'n/a';
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(0);
}

function fmtRate(perSecond) {
  return perSecond >= 1000 ? `${perSecond / 1000}k` : String(perSecond);
}

/** Script calls per admitted request: 0 for no Redis, else three significant digits. */
function fmtCalls(perRequest) {
  return perRequest === 0 ? '0' : perRequest.toPrecision(3);
}

/** The highest tier a run held, as "20k/s", or "none". */
function highestHeld(run) {
  const held = run.tiers.filter((t) => t.held);
  return held.length === 0 ? 'none' : `${fmtRate(held[held.length - 1].offeredPerSecond)}/s`;
}

/** The report as Markdown: one table per framework, a row per setup and key distribution. */
export function renderOpenLoopMarkdown({ meta, runs }) {
  const tiers = [...new Set(runs.flatMap((r) => r.tiers.map((t) => t.offeredPerSecond)))].sort(
    (a, b) => a - b,
  );
  const lines = [
    '# Open-loop tiers',
    '',
    `${meta.date}, \`${meta.command}\`, Node ${meta.node}, ${meta.cpus} CPUs, load ${meta.loadAverage}, ${meta.seconds} s.`,
    `Each server first answers ${meta.serverWarmupRequests} requests, unmeasured (closed loop); then each tier: ${meta.warmupMs} ms warm-up, ${meta.durationMs} ms measured. A tier is held when at most`,
    `${100 * meta.heldWhen.maxErrorShare}% of its requests failed and p99 is at most ${meta.heldWhen.maxP99Ms} ms;`,
    'higher tiers are not run once a setup falls over. Cells: p50 / p99 ms (error share when any;',
    `"generator late" when more than 10% of the tier's requests left the generator over 5 ms after they were due).`,
    'The server, Redis and the load generator share the machine: where the baseline falls over, so',
    'does the machine, and only the tiers below it compare limiters. Script calls per 2xx: the',
    "tier's script calls Redis ran (INFO commandstats) over its 2xx answers, at the highest held tier",
    '(`sluice-leased`: a lease of 100 units for 1 s per identity).',
    '',
  ];
  for (const framework of [...new Set(runs.map((r) => r.framework))]) {
    lines.push(`## ${framework}`, '');
    lines.push(
      `| setup | keys | ${tiers.map((t) => `${fmtRate(t)}/s`).join(' | ')} | held up to | CPU ms per 1k at the highest held tier (server / Redis / generator) | script calls per 2xx |`,
    );
    lines.push(`| --- | --- | ${tiers.map(() => '---').join(' | ')} | --- | --- | --- |`);
    for (const run of runs.filter((r) => r.framework === framework)) {
      const cells = tiers.map((rate) => {
        const t = run.tiers.find((x) => x.offeredPerSecond === rate);
        if (t === undefined) return '';
        const errors = t.errorShare > 0 ? ` (${(100 * t.errorShare).toFixed(1)}%)` : '';
        const mark = t.held ? '' : ' ✗';
        // A generator that sent many requests late was itself short of CPU at that tier.
        const late = t.lateShare > 0.1 ? ` (generator late ${(100 * t.lateShare).toFixed(0)}%)` : '';
        return `${fmtMs(t.p50Ms)} / ${fmtMs(t.p99Ms)}${errors}${late}${mark}`;
      });
      const top = [...run.tiers].reverse().find((t) => t.held);
      const cpu = top
        ? ['server', 'redis', 'generator'].map((k) => (1000 * top.cpuSecondsPer1k[k]).toFixed(0)).join(' / ')
        : '';
      const keys =
        run.dist === 'uniform' ? 'uniform' : `${run.dist} (top key ${(100 * run.hotShare).toFixed(0)}%)`;
      const calls = top?.scriptCallsPer2xx === undefined ? '' : fmtCalls(top.scriptCallsPer2xx);
      lines.push(
        `| ${run.setup} | ${keys} | ${cells.join(' | ')} | ${highestHeld(run)} | ${cpu} | ${calls} |`,
      );
    }
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

/**
 * p99 latency against the offered rate, log-log, one panel per framework and key distribution,
 * one line per setup; a hollow point is a tier the setup did not hold. Written by hand.
 */
export function renderOpenLoopSvg({ meta, runs }) {
  const frameworks = [...new Set(runs.map((r) => r.framework))];
  const dists = [...new Set(runs.map((r) => r.dist))];
  const setups = [...new Set(runs.map((r) => r.setup))];
  const rates = runs.flatMap((r) => r.tiers.map((t) => t.offeredPerSecond));
  const panelW = 260;
  const panelH = 180;
  const pad = { left: 60, top: 60, gapX: 30, gapY: 50 };
  const width = pad.left + frameworks.length * (panelW + pad.gapX) + 20;
  const height = pad.top + dists.length * (panelH + pad.gapY) + 40;
  const minR = Math.log10(Math.min(...rates, 1000));
  const maxR = Math.log10(Math.max(...rates, 2000));
  const minL = Math.log10(0.1);
  const maxL = Math.log10(2000);
  const px = (rate) => ((Math.log10(rate) - minR) / (maxR - minR)) * panelW;
  const py = (ms) =>
    panelH - ((Math.log10(Math.min(2000, Math.max(0.1, ms))) - minL) / (maxL - minL)) * panelH;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="10" y="20" font-size="15" font-weight="bold">${esc(`p99 latency by offered rate (open loop, ${meta.date})`)}</text>`,
  ];
  setups.forEach((s, i) => {
    const x = 10 + i * 130;
    out.push(`<rect x="${x}" y="32" width="12" height="4" fill="${COLORS[s] ?? '#000'}"/>`);
    out.push(`<text x="${x + 16}" y="38">${esc(s)}</text>`);
  });
  frameworks.forEach((framework, col) => {
    dists.forEach((dist, row) => {
      const ox = pad.left + col * (panelW + pad.gapX);
      const oy = pad.top + row * (panelH + pad.gapY);
      out.push(`<g transform="translate(${ox},${oy})">`);
      out.push(`<rect width="${panelW}" height="${panelH}" fill="none" stroke="#ccc"/>`);
      out.push(`<text x="0" y="-6" font-weight="bold">${esc(`${framework}, ${dist} keys`)}</text>`);
      for (const ms of [1, 10, 100, 1000]) {
        out.push(`<line x1="0" x2="${panelW}" y1="${py(ms)}" y2="${py(ms)}" stroke="#eee"/>`);
        if (col === 0) out.push(`<text x="-6" y="${py(ms) + 4}" text-anchor="end">${ms} ms</text>`);
      }
      for (const rate of [...new Set(rates)]) {
        out.push(
          `<text x="${px(rate)}" y="${panelH + 14}" text-anchor="middle" fill="#555">${fmtRate(rate)}</text>`,
        );
      }
      for (const run of runs.filter((r) => r.framework === framework && r.dist === dist)) {
        const color = COLORS[run.setup] ?? '#000';
        const points = run.tiers.map((t) => `${px(t.offeredPerSecond).toFixed(1)},${py(t.p99Ms).toFixed(1)}`);
        if (points.length > 1)
          out.push(
            `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points.join(' ')}"/>`,
          );
        for (const t of run.tiers) {
          const fill = t.held ? color : 'white';
          out.push(
            `<circle cx="${px(t.offeredPerSecond).toFixed(1)}" cy="${py(t.p99Ms).toFixed(1)}" r="3" fill="${fill}" stroke="${color}"/>`,
          );
        }
      }
      out.push('</g>');
    });
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
