/** Small statistics helpers: percentiles, medians, spreads, formatting. */

/** The q-quantile (0..1) of an already sorted numeric array (nearest rank). */
export function quantileSorted(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index];
}

/** Median of numbers (does not modify the input). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** `{ median, min, max }` of a list of ratios. */
export function spread(values) {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

/** The min-max of a spread as "0.81-1.20", or '' when there is none. */
export function fmtRange(s) {
  return s ? `${s.min.toFixed(2)}-${s.max.toFixed(2)}` : '';
}

/** 12345.6 -> "12.3k" */
export function fmtRate(perSecond) {
  if (!Number.isFinite(perSecond)) return 'n/a';
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(2)}M`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(1)}k`;
  return perSecond.toFixed(0);
}

/** Microseconds as a short string. */
export function fmtUs(us) {
  if (!Number.isFinite(us)) return 'n/a';
  if (us >= 1000) return `${(us / 1000).toFixed(2)} ms`;
  return `${us.toFixed(0)} µs`;
}

/** A ratio with two decimals and an x. */
export function fmtRatio(r) {
  return Number.isFinite(r) ? `${r.toFixed(2)}x` : 'n/a';
}

/** A Markdown table: a header row and rows of cells. */
export function table(header, rows) {
  const lines = [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`];
  for (const r of rows) lines.push(`| ${r.join(' | ')} |`);
  return lines.join('\n');
}
