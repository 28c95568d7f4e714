/** Runs Debian's promtool (the `prometheus` package) for the observability tests. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/apps.js';

/** The observability folder. */
export const OBSERVABILITY_DIR = join(REPO_ROOT, 'observability');

/** What one promtool run gave. */
export interface PromtoolRun {
  readonly status: number | null;
  readonly output: string;
}

/** Runs `promtool <args>` in observability/; throws a clear message when promtool is missing. */
export function promtool(...args: string[]): PromtoolRun {
  const run = spawnSync('promtool', args, { cwd: OBSERVABILITY_DIR, encoding: 'utf8', timeout: 60_000 });
  if (run.error !== undefined) {
    throw new Error(`promtool could not run (${run.error.message}): apt-get install prometheus`);
  }
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** The alert names of a rules file, in order. */
export function alertNames(rulesText: string): string[] {
  return [...rulesText.matchAll(/^\s*- alert: (\S+)\s*$/gm)].map((m) => m[1] as string);
}
