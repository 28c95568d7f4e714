/**
 * Summarizes a V8 .cpuprofile: top functions by self time, with their share of the busy
 * (non-idle) samples.
 *   node lib/profile-summary.mjs file.cpuprofile [top=25]
 */
import { readFileSync } from 'node:fs';

/** `[{ name, url, line, selfMs, share }]` sorted by self time. */
export function summarizeProfile(path, top = 25) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfCount = new Map();
  for (const id of profile.samples) selfCount.set(id, (selfCount.get(id) ?? 0) + 1);
  // Shares are of the busy samples: idle time says nothing about where CPU goes.
  const idleIds = new Set(
    profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id),
  );
  const totalSamples = profile.samples.filter((id) => !idleIds.has(id)).length;
  const durationMs = (profile.endTime - profile.startTime) / 1000;
  const grouped = new Map();
  for (const [id, count] of selfCount) {
    if (idleIds.has(id)) continue;
    const node = byId.get(id);
    const cf = node.callFrame;
    const url = cf.url.replace(/^file:\/\//, '').replace(/.*\/node_modules\//, '');
    const key = `${cf.functionName || '(anonymous)'} ${url}:${cf.lineNumber + 1}`;
    const entry = grouped.get(key) ?? {
      name: cf.functionName || '(anonymous)',
      url,
      line: cf.lineNumber + 1,
      samples: 0,
    };
    entry.samples += count;
    grouped.set(key, entry);
  }
  return [...grouped.values()]
    .sort((a, b) => b.samples - a.samples)
    .slice(0, top)
    .map((e) => ({ ...e, selfMs: (e.samples / totalSamples) * durationMs, share: e.samples / totalSamples }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = summarizeProfile(process.argv[2], Number(process.argv[3] ?? 25));
  for (const r of rows) {
    console.log(`${(r.share * 100).toFixed(1).padStart(5)}%  ${r.name}  ${r.url}:${r.line}`);
  }
}
