/**
 * The regional quota fleet's parts, for the fleet test and `npm run demo -- --regions N`: the
 * `sluice-server` bin (the build) as OS processes on one Redis, and regions (region.mjs) as OS
 * processes, each reporting every 200 ms what it admitted. Everything started is stopped by PID.
 */
import { fork, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'packages/server/dist/bin.js');
const REGION = join(ROOT, 'test/quota/region.mjs');

/** The fleet's config: one domain, one bucket key `api` with `budgetPerSecond`. */
export function quotaConfig(budgetPerSecond) {
  return `domain: regions\ndescriptors:\n  - key: api\n    rate_limit: { unit: second, requests_per_unit: ${budgetPerSecond} }\n`;
}

/** A runtime root holding `yaml` as the only config file. */
export function configRoot(yaml) {
  const root = mkdtempSync(join(tmpdir(), 'sluice-quota-'));
  mkdirSync(join(root, 'ratelimit', 'config'), { recursive: true });
  writeFileSync(join(root, 'ratelimit', 'config', 'regions.yaml'), yaml);
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** Starts `sluice-server` on free loopback ports; resolves once it listens. */
export async function startQuotaServer({ root, redisUrl, ttlMs, grpcPort = 0 }) {
  const child = spawn(process.execPath, [BIN], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      GRPC_PORT: String(grpcPort),
      PORT: '0',
      RUNTIME_ROOT: root,
      RUNTIME_SUBDIRECTORY: 'ratelimit',
      RUNTIME_WATCH_ROOT: 'false',
      REDIS_URL: redisUrl,
      SLUICE_QUOTA_TTL_MS: String(ttlMs),
      SLUICE_TIMEOUT_MS: '2000',
      SLUICE_WORKERS: '1',
    },
    stdio: 'pipe',
  });
  let text = '';
  child.stdout.on('data', (chunk) => (text += chunk));
  child.stderr.on('data', (chunk) => (text += chunk));
  const exited = new Promise((done) => child.once('exit', (code) => done(code)));
  const deadline = Date.now() + 15_000;
  while (!/listening on grpc \d+/.test(text)) {
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`sluice-server did not start:\n${text}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const port = Number(/listening on grpc (\d+)/.exec(text)[1]);
  return {
    port,
    pid: child.pid,
    output: () => text,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * Starts a region process: `address` of its server, its `name` (client id), `failMode` once its
 * assignment is gone. `records` collects what it reported (every 200 ms).
 */
export async function startRegion({ name, address, failMode = 'closed', reportIntervalMs = 250 }) {
  const options = {
    address,
    domain: 'regions',
    bucket: { api: 'global' },
    clientId: name,
    reportIntervalMs,
    failMode,
  };
  const child = fork(REGION, [JSON.stringify(options)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const records = [];
  child.on('message', (message) => {
    if (message.type === 'stats') records.push(message);
  });
  await new Promise((done, fail) => {
    child.once('message', done);
    child.once('exit', () => fail(new Error(`region ${name} exited`)));
  });
  const exited = new Promise((done) => child.once('exit', done));
  return {
    name,
    records,
    setDemand: (perSecond) => child.send({ type: 'demand', perSecond }),
    stop: async () => {
      if (child.exitCode === null && child.connected) child.send({ type: 'exit' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** What a static split (each region `budget / n`, a token bucket) admits of `demand` per second. */
export function staticAdmitted(demands, budget) {
  const each = budget / demands.length;
  return demands.reduce((sum, d) => sum + Math.min(d, each), 0);
}

/** Sleeps `ms`. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
