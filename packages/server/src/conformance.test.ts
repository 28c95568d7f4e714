/**
 * The conformance table (conformance.fixture.ts, ported from envoyproxy/ratelimit's tests) through
 * a real gRPC client built from the protos, through a Python client on gRPC's C core
 * (python.test-support.ts) and through POST /json, on a real redis-server and on a real 3+3 Redis
 * Cluster.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisCluster, startRedisCluster } from '../../../test/support/redis-cluster.js';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import { CASES, type Case, type Step } from './conformance.fixture.js';
import { EXAMPLE_YAML, OTHER_DOMAINS } from './conformance-config.fixture.js';
import {
  descriptor,
  inOneMinuteWindow,
  postJson,
  type RlsClient,
  type RuntimeDir,
  rlsClient,
  runtimeDir,
  serviceEnv,
  startInProcess,
} from './harness.test-support.js';
import { PythonRls } from './python.test-support.js';
import type { RunningServer } from './server.js';

/** What a step's answer is compared on, from either transport. */
interface Answer {
  overall: string;
  statuses: { code: string; remaining: number; requestsPerUnit: number | undefined }[];
}

function request(step: Step) {
  return {
    domain: step.domain ?? 'rl',
    hits_addend: step.hits ?? 0,
    descriptors: step.descriptors.map((pairs, i) => {
      const hits = step.descriptorHits?.[i];
      return {
        ...descriptor(...pairs),
        ...(hits === undefined ? {} : { hits_addend: { value: String(hits) } }),
      };
    }),
  };
}

async function viaGrpc(client: RlsClient, step: Step): Promise<Answer> {
  const reply = await client.shouldRateLimit(request(step));
  return {
    overall: reply.overall_code,
    statuses: reply.statuses.map((s) => ({
      code: s.code,
      remaining: s.limit_remaining,
      requestsPerUnit: s.current_limit?.requests_per_unit,
    })),
  };
}

/** A step's request in proto3 JSON (what POST /json and the Python client take). */
function jsonRequest(step: Step) {
  const body = request(step);
  return {
    domain: body.domain,
    hitsAddend: body.hits_addend,
    descriptors: step.descriptors.map((pairs, i) => {
      const hits = step.descriptorHits?.[i];
      return { ...descriptor(...pairs), ...(hits === undefined ? {} : { hitsAddend: hits }) };
    }),
  };
}

/** A response in proto3 JSON (defaults left out) as an `Answer`. */
function jsonAnswer(body: unknown): Answer {
  const parsed = body as {
    overallCode: string;
    statuses?: { code: string; limitRemaining?: number; currentLimit?: { requestsPerUnit?: number } }[];
  };
  return {
    overall: parsed.overallCode,
    statuses: (parsed.statuses ?? []).map((s) => ({
      code: s.code,
      remaining: s.limitRemaining ?? 0,
      requestsPerUnit: s.currentLimit?.requestsPerUnit,
    })),
  };
}

async function viaJson(port: number, step: Step): Promise<Answer> {
  const reply = await postJson(port, jsonRequest(step));
  const answer = jsonAnswer(reply.body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(answer.overall === 'OVER_LIMIT' ? 429 : 200);
  return answer;
}

let python: PythonRls | undefined;
afterAll(() => python?.close());

async function viaPython(port: number, step: Step): Promise<Answer> {
  python ??= new PythonRls();
  const reply = await python.ask(port, jsonRequest(step));
  expect(reply.error, JSON.stringify(reply.error)).toBeUndefined();
  return jsonAnswer(reply.response);
}

function check(testCase: Case, index: number, step: Step, answer: Answer): void {
  const where = `${testCase.name}, step ${index + 1}`;
  expect(answer.overall, where).toBe(step.overall);
  expect(answer.statuses, where).toHaveLength(step.descriptors.length);
  step.statuses?.forEach((expected, i) => {
    const got = answer.statuses[i];
    expect(got?.code, `${where}, status ${i}`).toBe(expected.code);
    if (expected.remaining !== undefined)
      expect(got?.remaining, `${where}, remaining ${i}`).toBe(expected.remaining);
    if (expected.requestsPerUnit !== undefined)
      expect(got?.requestsPerUnit, `${where}, limit ${i}`).toBe(expected.requestsPerUnit);
  });
}

function ask(
  transport: 'grpc' | 'json' | 'python',
  client: RlsClient,
  server: RunningServer,
  step: Step,
): Promise<Answer> {
  if (transport === 'grpc') return viaGrpc(client, step);
  if (transport === 'python') return viaPython(server.grpcPort, step);
  return viaJson(server.httpPort, step);
}

/** Runs every case on a service started with `redisEnv`, each case under its own key prefix. */
function conformance(
  title: string,
  start: () => Promise<Record<string, string>>,
  transport: 'grpc' | 'json' | 'python',
): void {
  describe(title, () => {
    let dir: RuntimeDir;
    let redisEnv: Record<string, string>;
    beforeAll(async () => {
      dir = runtimeDir({ 'example.yaml': EXAMPLE_YAML, ...OTHER_DOMAINS });
      redisEnv = await start();
    });
    afterAll(() => dir?.remove());
    it.each(CASES.map((c, i) => [c.name, c, i] as const))('%s', async (_name, testCase, n) => {
      const server: RunningServer = await startInProcess(
        serviceEnv(dir, { ...redisEnv, CACHE_KEY_PREFIX: `${transport}-${n}-${Date.now()}:` }),
      );
      const client = rlsClient(server.grpcPort);
      await inOneMinuteWindow();
      try {
        for (const [i, step] of testCase.steps.entries()) {
          check(testCase, i, step, await ask(transport, client, server, step));
        }
      } finally {
        client.close();
        await python?.disconnect(server.grpcPort);
        await server.close();
      }
    });
  });
}

let redis: RedisProcess | undefined;
let cluster: RedisCluster | undefined;
afterAll(async () => {
  await redis?.stop();
  await cluster?.stop();
});
const standalone = async () => {
  redis ??= await startRedis();
  return { REDIS_URL: `127.0.0.1:${redis.port}` };
};

conformance('gRPC on a redis-server', standalone, 'grpc');
conformance('POST /json on a redis-server', standalone, 'json');
conformance('gRPC from Python (gRPC C core) on a redis-server', standalone, 'python');
conformance(
  'gRPC on a 3+3 Redis Cluster',
  async () => {
    cluster ??= await startRedisCluster();
    return { REDIS_TYPE: 'cluster', REDIS_URL: cluster.nodesEnv };
  },
  'grpc',
);
