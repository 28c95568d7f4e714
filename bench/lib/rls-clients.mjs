/**
 * What the rate limit service suites (suites/rls.mjs, suites/rls-cost.mjs) share: a gRPC client of
 * ShouldRateLimit over several connections, the processes of a service (primary and workers), and
 * the closed loop that drives a caller.
 */
import { readFileSync } from 'node:fs';
import { credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { packageDefinition } from '@sluice/server';
import { processCpuSeconds } from './open-loop.mjs';

/** `pid` and its children (a primary's workers), from /proc. */
export function processTree(pid) {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    return [pid, ...children.filter(Boolean).map(Number)];
  } catch {
    return [pid];
  }
}

/** CPU seconds of `pid` and its children so far. */
export function treeCpuSeconds(pid) {
  return processTree(pid).reduce((sum, p) => sum + processCpuSeconds(p), 0);
}

/**
 * A ShouldRateLimit client over `connections` connections (a server's workers are handed
 * connections, not calls): `call(tenant)` asks for one descriptor `tenant=t<tenant>` of domain
 * `bench` and rejects unless the answer is OK.
 */
export function grpcCaller(port, connections) {
  const Service = loadPackageDefinition(packageDefinition()).envoy.service.ratelimit.v3.RateLimitService;
  const clients = Array.from(
    { length: connections },
    () =>
      new Service(`127.0.0.1:${port}`, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
  );
  const call = (tenant) =>
    new Promise((resolve, reject) => {
      const request = {
        domain: 'bench',
        descriptors: [{ entries: [{ key: 'tenant', value: `t${tenant}` }] }],
      };
      clients[tenant % connections].ShouldRateLimit(request, (error, reply) => {
        if (error) reject(error);
        else if (reply.overall_code !== 'OK') reject(new Error(`unexpected ${reply.overall_code}`));
        else resolve();
      });
    });
  const close = () => {
    for (const client of clients) client.close();
  };
  return { call, close };
}

/**
 * `concurrency` calls of `call(tenant)` outstanding for `ms`, tenants in turn over `tenants`: the
 * calls made, the seconds taken and the calls per second.
 */
export async function closedLoop(call, ms, concurrency, tenants = 10_000) {
  let done = 0;
  let next = 0;
  const until = performance.now() + ms;
  const worker = async () => {
    while (performance.now() < until) {
      await call(next++ % tenants);
      done++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  return { calls: done, seconds, rate: done / seconds };
}
