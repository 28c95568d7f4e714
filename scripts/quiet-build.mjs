#!/usr/bin/env node
/**
 * `npm run build` without its output unless it fails: `npm run demo` builds first, and a
 * newcomer should see the demo, not turbo's task logs. On failure the captured output is
 * printed and the exit code passed on.
 */
import { spawnSync } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const result = spawnSync(npm, ['run', '--silent', 'build', '--', '--output-logs=errors-only'], {
  encoding: 'utf8',
  env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' },
  maxBuffer: 64 * 1024 * 1024,
  shell: process.platform === 'win32',
});
if (result.status !== 0) {
  process.stdout.write(result.stdout ?? '');
  process.stderr.write(result.stderr ?? '');
  if (result.error !== undefined) process.stderr.write(`${result.error.message}\n`);
  process.stderr.write('The build failed (npm run build); the demo needs it.\n');
  process.exit(result.status ?? 1);
}
