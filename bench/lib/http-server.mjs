/**
 * The HTTP benchmark's shared parts: a server process from servers/server.mjs (started, port
 * read from its output, stopped) and one autocannon run of `GET /limited` against it, keyed by
 * `x-api-key`: a random identity of 10,000 per request on the allowed path (or Zipf over them,
 * or one hot identity), one over-quota identity on the deny path.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { keySequence } from './key-distributions.mjs';

const serverScript = join(dirname(fileURLToPath(import.meta.url)), '..', 'servers', 'server.mjs');

/** The identities of the allowed path. */
export const IDENTITIES = Array.from({ length: 10_000 }, (_, i) => `tenant-${String(i).padStart(5, '0')}`);

/**
 * The leased setup's lease, as server.mjs arguments: 100 units for 1 s. 100 units turn a hot
 * key's script calls into about 1 per 100 admitted requests (the 1.2/units target: 0.012), and the
 * allowed path stays allowed: the policy's 1,000,000 per hour refills about 278 units per second
 * per identity, while even 10k uniform identities at 20k req/s (2 requests per identity per
 * second, each at worst taking a fresh lease) take at most 200, and a hot key spends its leases
 * whole, as many units as requests, from the 1,000,000 burst.
 */
export const LEASE_ARGS = Object.freeze(['--lease-units', '100', '--lease-ttl-ms', '1000']);

/** The identity of the deny path (over its quota after the first request). */
export const OVER_QUOTA_IDENTITY = 'over-quota-tenant';

/**
 * Starts `servers/server.mjs` with `args` (after `nodeArgs`, such as `--cpu-prof`) and resolves
 * with `{ port, child, output() }` once it prints its port; rejects when it exits first or
 * stays silent for `startTimeoutMs`. `launcher` runs node under another program
 * (`['valgrind', '--tool=callgrind']`): the child is then that program.
 */
export function startServerProcess(
  args,
  { nodeArgs = [], label = 'server', launcher = [], startTimeoutMs = 30_000 } = {},
) {
  const command = [...launcher, process.execPath, ...nodeArgs, serverScript, ...args];
  const child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} did not start: ${output}`)), startTimeoutMs);
    const onData = (chunk) => {
      output += chunk;
      const m = /listening on (\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ port: Number(m[1]), child, output: () => output });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with ${code}: ${output}`));
    });
  });
}

/** Stops a server process: SIGTERM, SIGKILL after 5 s. */
export async function stopServerProcess(server) {
  if (server.child.exitCode !== null) return;
  server.child.removeAllListeners('exit');
  const done = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 5000);
  await done;
  clearTimeout(timer);
}

/** Tables of identity indexes for the allowed path's non-uniform key distributions, made once. */
const sequences = new Map();

/**
 * The allowed path's identity for each request: `uniform` (random of 10k, as before), or `zipf` /
 * `hot` (key-distributions.mjs), walking that distribution's table from a random start.
 */
function allowedIdentity(keys) {
  if (keys === 'uniform') return () => IDENTITIES[(Math.random() * IDENTITIES.length) | 0];
  let table = sequences.get(keys);
  if (table === undefined) {
    table = keySequence(keys, { identities: IDENTITIES.length });
    sequences.set(keys, table);
  }
  let i = (Math.random() * table.length) | 0;
  return () => IDENTITIES[table[i++ & (table.length - 1)]];
}

/**
 * One autocannon run of `GET /limited` for `seconds`, or for `amount` requests (then each may take
 * up to 120 s); `allowed` picks the path (see the file's header), `keys` the allowed path's key
 * distribution (`uniform`, `zipf` or `hot`).
 */
export function loadLimited({ port, seconds, amount, connections = 32, allowed, keys = 'uniform' }) {
  const identity = allowed ? allowedIdentity(keys) : () => OVER_QUOTA_IDENTITY;
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    ...(amount === undefined ? { duration: seconds } : { amount, timeout: 120 }),
    requests: [
      {
        method: 'GET',
        path: '/limited',
        setupRequest: (req) => {
          req.headers = {
            ...req.headers,
            'x-api-key': identity(),
          };
          return req;
        },
      },
    ],
  });
}
