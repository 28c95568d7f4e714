#!/usr/bin/env node
/**
 * `npm run demo`: four nodes of the Express example (or `npm run demo -- --app fastify`: the
 * Fastify example) share one Redis; 1,000 concurrent requests
 * with one API key, spread at random over the nodes, meet ONE global limit (GET /limited:
 * token bucket, burst 20, refill 1/s). The same traffic against four per-node limits (each node
 * counting alone, as an in-process limiter does) shows what a per-node limiter would have let through.
 *
 * `npm run demo -- --regions 3`: regional quotas instead (test/demo/regions.mjs).
 *
 * Uses REDIS_URL when set, else a private redis-server on a free port. Without redis-server on
 * PATH it says so and runs the same demo on the memory store in one process.
 * Everything it starts is stopped by PID.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from '../support/free-port.js';
import { hasRedisServer, startRedis } from '../support/redis-server.js';
import { runRegionsDemo } from './regions.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The example apps the demo can run: folder, name, and how to serve one in this process. */
const APPS = {
  express: {
    label: 'Express',
    dir: join(ROOT, 'apps/express-example'),
    async serve(createApp, options) {
      const { app } = createApp(options);
      const server = await new Promise((done) => {
        const s = app.listen(0, '127.0.0.1', () => done(s));
      });
      const stop = () =>
        new Promise((done) => {
          server.closeAllConnections();
          server.close(() => done());
        });
      return { port: server.address().port, stop };
    },
  },
  fastify: {
    label: 'Fastify',
    dir: join(ROOT, 'apps/fastify-example'),
    async serve(createApp, options) {
      const { app } = await createApp(options);
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: app.server.address().port, stop: () => app.close() };
    },
  },
};

/** `--app <name>` or `--app=<name>`, else SLUICE_DEMO_APP, else express. */
function chosenApp(argv) {
  const at = argv.findIndex((arg) => arg === '--app' || arg.startsWith('--app='));
  const name =
    at < 0
      ? (process.env.SLUICE_DEMO_APP ?? 'express')
      : argv[at].includes('=')
        ? argv[at].slice(6)
        : argv[at + 1];
  const app = Object.hasOwn(APPS, name) ? APPS[name] : undefined;
  if (app === undefined) throw new Error(`--app must be one of ${Object.keys(APPS).join(', ')}, got ${name}`);
  return { name, ...app };
}

/** `--regions <n>` or `--regions=<n>`: the regional quotas demo with n regions; undefined without it. */
function chosenRegions(argv) {
  const at = argv.findIndex((arg) => arg === '--regions' || arg.startsWith('--regions='));
  if (at < 0) return undefined;
  return Number(argv[at].includes('=') ? argv[at].slice(10) : argv[at + 1]);
}

const REGIONS = chosenRegions(process.argv.slice(2));
const APP = chosenApp(process.argv.slice(2));
const APP_DIR = APP.dir;
const NODES = 4;
/** Connections per node, like a client's or load balancer's pool; the rest of the burst queues. */
const SOCKETS_PER_NODE = 25;
/**
 * Store deadline of the nodes. Core's 100 ms default suits a quiet server; four nodes and a
 * 1,000-request burst on one laptop can miss it, which would show up as 503s here.
 */
const TIMEOUT_MS = '1000';
const REQUESTS = 1000;
const BURST = 20;
const REFILL_PER_SECOND = 1;
const children = new Set();
/** The private redis-server while it runs: killed by PID on any exit, as the children are. */
let privateRedis;

function log(line = '') {
  process.stdout.write(`${line}\n`);
}

/** Spawns a child, remembers it for cleanup, resolves its exit. */
function track(child) {
  children.add(child);
  child.exited = new Promise((done) =>
    child.once('exit', () => {
      children.delete(child);
      done();
    }),
  );
  return child;
}

async function stopChild(child) {
  if (!children.has(child)) return;
  process.kill(child.pid, 'SIGTERM');
  const timer = setTimeout(() => children.has(child) && process.kill(child.pid, 'SIGKILL'), 3000);
  await child.exited;
  clearTimeout(timer);
}

/** One process of the chosen example app; resolves when it prints `listening on <port>`. */
async function startNode(env) {
  const port = await freePort();
  const child = track(
    spawn(process.execPath, ['dist/main.js'], {
      cwd: APP_DIR,
      env: { ...process.env, ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  await new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`node on port ${port} did not start:\n${output}`)), 15_000);
    const onData = (chunk) => {
      output += chunk.toString();
      if (output.includes(`listening on ${port}`)) {
        clearTimeout(timer);
        done();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`node on port ${port} exited (${code}):\n${output}`));
    });
  });
  return {
    name: `${APP.name} @ 127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}`,
    stop: () => stopChild(child),
  };
}

/** In-process nodes: the chosen example app served by this process. */
async function startInProcessNodes(createApp, storeFor) {
  const prefix = `demo-${randomUUID().slice(0, 8)}`;
  return Promise.all(
    Array.from({ length: NODES }, async (_, index) => {
      const { port, stop } = await APP.serve(createApp, { store: storeFor(index), prefix });
      return { name: `${APP.name} @ 127.0.0.1:${port}`, url: `http://127.0.0.1:${port}`, stop };
    }),
  );
}

/** GET one URL through a pooled agent; resolves the status code. */
function get(url, agent, headers) {
  return new Promise((resolveStatus, reject) => {
    const req = request(url, { agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolveStatus(res.statusCode));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** 1,000 concurrent GET /limited with one API key, each to a random node. */
async function fire(nodes) {
  const apiKey = `demo-${randomUUID()}`;
  const agents = nodes.map(() => new Agent({ keepAlive: true, maxSockets: SOCKETS_PER_NODE }));
  const rows = nodes.map((node) => ({ node: node.name, sent: 0, admitted: 0, denied: 0, other: 0 }));
  const started = performance.now();
  await Promise.all(
    Array.from({ length: REQUESTS }, async () => {
      const index = Math.floor(Math.random() * nodes.length);
      const row = rows[index];
      row.sent++;
      try {
        const status = await get(`${nodes[index].url}/limited`, agents[index], { 'x-api-key': apiKey });
        if (status === 200) row.admitted++;
        else if (status === 429) row.denied++;
        else row.other++;
      } catch {
        row.other++;
      }
    }),
  );
  const elapsedSeconds = (performance.now() - started) / 1000;
  for (const agent of agents) agent.destroy();
  return { rows, elapsedSeconds };
}

const pad = (value, width) => String(value).padStart(width);

function printTable(title, { rows, elapsedSeconds }) {
  const total = rows.reduce(
    (sum, row) => ({
      sent: sum.sent + row.sent,
      admitted: sum.admitted + row.admitted,
      denied: sum.denied + row.denied,
      other: sum.other + row.other,
    }),
    { sent: 0, admitted: 0, denied: 0, other: 0 },
  );
  const width = Math.max(...rows.map((row) => row.node.length), 'node'.length);
  const showOther = total.other > 0;
  log(title);
  log(
    `  ${'node'.padEnd(width)}  ${pad('sent', 5)}  ${pad('admitted', 8)}  ${pad('denied', 6)}${showOther ? '  errors' : ''}`,
  );
  for (const row of rows) {
    log(
      `  ${row.node.padEnd(width)}  ${pad(row.sent, 5)}  ${pad(row.admitted, 8)}  ${pad(row.denied, 6)}${showOther ? `  ${pad(row.other, 6)}` : ''}`,
    );
  }
  log(
    `  ${'total'.padEnd(width)}  ${pad(total.sent, 5)}  ${pad(total.admitted, 8)}  ${pad(total.denied, 6)}${showOther ? `  ${pad(total.other, 6)}` : ''}`,
  );
  log(`  (${elapsedSeconds.toFixed(2)} s)`);
  log();
  return total;
}

async function main() {
  if (!existsSync(join(APP_DIR, 'dist/main.js')) || !existsSync(join(APP_DIR, 'dist/app.js'))) {
    throw new Error(`the ${APP.label} example is not built: run \`npm run build\` first (npm run demo does)`);
  }
  const { createApp } = await import(pathToFileURL(join(APP_DIR, 'dist/app.js')).href);
  const { MemoryStore } = await import('@sluice/core');

  const stops = [];
  try {
    let global;
    let where;
    if (process.env.REDIS_URL || hasRedisServer()) {
      let url = process.env.REDIS_URL;
      if (url) {
        where = `Redis at ${url.replace(/\/\/[^@]*@/, '//')}`;
      } else {
        const redis = await startRedis();
        privateRedis = redis;
        stops.push(async () => {
          await redis.stop();
          privateRedis = undefined;
        });
        url = redis.url;
        where = `a private redis-server (${url})`;
      }
      const prefix = `demo-${randomUUID().slice(0, 8)}`;
      const nodes = await Promise.all(
        Array.from({ length: NODES }, () =>
          startNode({ REDIS_URL: url, SLUICE_PREFIX: prefix, SLUICE_TIMEOUT_MS: TIMEOUT_MS }),
        ),
      );
      stops.push(() => Promise.all(nodes.map((node) => node.stop())));
      log(`Sluice demo: ${NODES} processes of the ${APP.label} example share ${where}.`);
      log(`GET /limited allows a burst of ${BURST}, refilled at ${REFILL_PER_SECOND}/s, per API key.`);
      log(`Firing ${REQUESTS} concurrent requests with one API key, each to a random node...`);
      log();
      global = printTable('One global limit (Sluice + Redis):', await fire(nodes));
    } else {
      log('redis-server is not on PATH and REDIS_URL is unset: running the same demo on the memory store,');
      log(`with ${NODES} ${APP.label} apps in this one process sharing one MemoryStore.`);
      log(`GET /limited allows a burst of ${BURST}, refilled at ${REFILL_PER_SECOND}/s, per API key.`);
      log();
      const shared = new MemoryStore();
      const nodes = await startInProcessNodes(createApp, () => shared);
      stops.push(() => Promise.all(nodes.map((node) => node.stop())));
      global = printTable('One global limit (shared store):', await fire(nodes));
    }

    const perNodeStores = Array.from({ length: NODES }, () => new MemoryStore());
    const alone = await startInProcessNodes(createApp, (index) => perNodeStores[index]);
    stops.push(() => Promise.all(alone.map((node) => node.stop())));
    const perNode = printTable(
      'The same traffic with four per-node limits (each node counting alone):',
      await fire(alone),
    );

    log(
      `Global: ${global.admitted} admitted of ${global.sent}, the burst of ${BURST} plus what refilled during the run.`,
    );
    const ratio = global.admitted > 0 ? ` (${(perNode.admitted / global.admitted).toFixed(1)}x)` : '';
    log(
      `Four per-node limits would have admitted ${perNode.admitted}${ratio}: each node grants the whole quota on its own.`,
    );
    if (global.other > 0 || perNode.other > 0) {
      process.exitCode = 1;
      log('Some requests failed with neither 200 nor 429: see the errors column.');
    }
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

/** Kills every child and the private redis-server at once (exit, signal, failure). */
function killAll() {
  for (const child of children) child.kill('SIGKILL');
  if (privateRedis !== undefined) process.kill(privateRedis.pid, 'SIGKILL');
  privateRedis = undefined;
}

// Whatever happens (a closed pipe, an uncaught error), leave nothing running.
process.on('exit', killAll);
process.stdout.on('error', (error) => {
  if (error.code !== 'EPIPE') throw error;
});

const interrupt = () => {
  killAll();
  process.exit(130);
};
process.once('SIGINT', interrupt);
process.once('SIGTERM', interrupt);

(REGIONS === undefined ? main() : runRegionsDemo(REGIONS, log)).then(
  () => process.exit(),
  (error) => {
    killAll();
    console.error(`demo failed: ${error instanceof Error ? error.message : error}`);
    process.exit(1);
  },
);
