#!/usr/bin/env node
/**
 * Runs Stryker (stryker.config.mjs) over @sluice/core one group of files after another, so
 * a loaded machine gets each group's results as soon as it is done, then prints the scores
 * of every group from reports/mutation/<group>.json and lists the surviving mutants.
 *
 *   node scripts/mutate-ts.mjs                  every group, then the summary
 *   node scripts/mutate-ts.mjs keys http        these groups, then the summary
 *   node scripts/mutate-ts.mjs --report         the summary of the last runs only
 *
 * Score as Stryker counts it: (killed + timeout) / (killed + timeout + survived + no coverage).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MUTATE_GROUPS } from '../stryker.config.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const reportOnly = args.includes('--report');
const named = args.filter((a) => !a.startsWith('--'));
for (const g of named) {
  if (!(g in MUTATE_GROUPS))
    throw new Error(`mutate-ts: unknown group ${g}; groups: ${Object.keys(MUTATE_GROUPS).join(', ')}`);
}
const groups = named.length > 0 ? named : Object.keys(MUTATE_GROUPS);

if (!reportOnly) {
  for (const group of groups) {
    console.log(`mutate-ts: group ${group}`);
    const run = spawnSync('npx', ['stryker', 'run'], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, SLUICE_MUTATE_GROUP: group },
    });
    if (run.status !== 0) process.exit(run.status ?? 1);
  }
}

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);
const total = { detected: 0, undetected: 0 };
const survivors = [];
console.log('\ngroup        file                                        score   killed  survived');
for (const group of Object.keys(MUTATE_GROUPS)) {
  const path = join(root, 'reports/mutation', `${group}.json`);
  if (!existsSync(path)) {
    console.log(`${group.padEnd(12)} (not run yet)`);
    continue;
  }
  const report = JSON.parse(readFileSync(path, 'utf8'));
  for (const [file, { mutants, source }] of Object.entries(report.files)) {
    const detected = mutants.filter((m) => DETECTED.has(m.status)).length;
    const undetected = mutants.filter((m) => UNDETECTED.has(m.status));
    total.detected += detected;
    total.undetected += undetected.length;
    const all = detected + undetected.length;
    const score = all ? ((100 * detected) / all).toFixed(1) : '-';
    console.log(
      `${group.padEnd(12)} ${file.padEnd(43)} ${score.padStart(5)}% ${String(detected).padStart(7)} ${String(undetected.length).padStart(9)}`,
    );
    const lines = source.split('\n');
    for (const m of undetected) {
      const line = lines[m.location.start.line - 1]?.trim() ?? '';
      survivors.push(
        `${file}:${m.location.start.line} ${m.mutatorName} ${m.status}: ${line} -> ${m.replacement ?? ''}`,
      );
    }
  }
}
const all = total.detected + total.undetected;
console.log(
  `\nmutate-ts: score ${all ? ((100 * total.detected) / all).toFixed(1) : '-'}% (${total.detected} of ${all} detected)`,
);
if (args.includes('--survivors')) for (const s of survivors) console.log(`  ${s}`);
