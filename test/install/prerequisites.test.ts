/**
 * A fresh machine: `npm test` checks for every program outside npm that the suite runs before
 * anything else, and names what is missing with the commands that install it; the test support
 * rejects with a clear message (never an unhandled 'error' event) when redis-server cannot start.
 * Each case runs with a PATH that lacks the programs: nothing is uninstalled.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  aptPackages,
  formatMissing,
  missingPrerequisites,
  PREREQUISITES,
} from '../../scripts/prerequisites.mjs';
import { REPO_ROOT } from '../support/apps.js';
import { startRedis } from '../support/redis-server.js';

const SCRIPT = join(REPO_ROOT, 'scripts', 'prerequisites.mjs');
const NON_PYTHON = ['redis-server', 'redis-cli', 'redis-sentinel', 'promtool', 'prometheus'];

/** A directory holding only node, npm and a shell: a PATH on which none of the programs is found. */
const bareBin = mkdtempSync(join(tmpdir(), 'sluice-bare-path-'));
for (const program of ['node', 'npm', 'sh', 'env']) {
  const found = spawnSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' }).stdout.trim();
  symlinkSync(realpathSync(found), join(bareBin, program));
}
const bareEnv = { ...process.env, PATH: bareBin, SLUICE_PYTHON: '' };

afterAll(() => rmSync(bareBin, { recursive: true, force: true }));

describe('the prerequisites check', () => {
  it('finds every program on the PATH this suite runs with', () => {
    expect(missingPrerequisites(process.env).map((p) => p.program)).toEqual([]);
  });

  it('names each missing program and how to install it, and exits 1', () => {
    const run = spawnSync(process.execPath, [SCRIPT], { env: bareEnv, encoding: 'utf8', cwd: REPO_ROOT });
    expect(run.status).toBe(1);
    for (const program of NON_PYTHON) expect(run.stderr).toMatch(new RegExp(`^  ${program} +for `, 'm'));
    expect(run.stderr).toContain(
      'Debian/Ubuntu: sudo apt-get install redis-server redis-tools redis-sentinel prometheus',
    );
    expect(run.stderr).toContain('macOS:         brew install redis prometheus');
  });

  it('tells .ci/run which Debian packages to install, each once', () => {
    const run = spawnSync(process.execPath, [SCRIPT, '--apt-packages'], { env: bareEnv, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout.trim().split(' ').slice(0, 4)).toEqual([
      'redis-server',
      'redis-tools',
      'redis-sentinel',
      'prometheus',
    ]);
  });

  it('names python3 with grpcio when no Python with grpc is found', () => {
    const python = PREREQUISITES.find((p) => p.program === 'python3 with grpcio');
    expect(python).toBeDefined();
    // A probe no Python passes stands in for a Python without grpcio.
    const without = { ...python!, args: ['-c', 'import module_that_is_not_there'] };
    const block = formatMissing([without]);
    expect(block).toContain("python3 with grpcio  for the service's tests from a non-Node gRPC client");
    expect(block).toContain('sudo apt-get install python3-grpcio');
    expect(block).toContain('brew install python && python3 -m pip install grpcio');
    expect(aptPackages([without, without])).toEqual(['python3-grpcio']);
  });

  it('stops `npm test` within seconds, before the build, when redis-server is missing', () => {
    const started = Date.now();
    const run = spawnSync('npm', ['test'], {
      env: bareEnv,
      encoding: 'utf8',
      cwd: REPO_ROOT,
      timeout: 60_000,
      killSignal: 'SIGKILL',
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('The test suite needs programs that are not on this PATH:');
    expect(run.stderr).toMatch(/^ {2}redis-server +for every Redis-backed test$/m);
    expect(`${run.stdout}${run.stderr}`).not.toContain('turbo');
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});

describe('starting redis-server without it on PATH', () => {
  it('rejects with a message naming the program, with no unhandled error event', async () => {
    const path = process.env.PATH;
    process.env.PATH = bareBin;
    try {
      await expect(startRedis()).rejects.toThrow('redis-server did not start (is it on PATH?)');
    } finally {
      process.env.PATH = path;
    }
  });
});
