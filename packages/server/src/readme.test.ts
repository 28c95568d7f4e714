/**
 * The README's quick start, run as written: its config file, the environment of its
 * `npx sluice-server` line (with this test's Redis and free ports), its curl body, its answers.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import { inOneMinuteWindow, postJson, type ServerProcess, spawnServer } from './harness.test-support.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const QUICK_START = README.slice(README.indexOf('\n## Quick start'), README.indexOf('\n## Environment'));

function block(language: string): string {
  const match = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(QUICK_START);
  if (match?.[1] === undefined) throw new Error(`no ${language} block in the quick start`);
  return match[1];
}

let redis: RedisProcess;
let server: ServerProcess;
let work: string;
let body: unknown;

beforeAll(async () => {
  redis = await startRedis();
  work = mkdtempSync(join(tmpdir(), 'sluice-readme-'));
  const yaml = block('yaml');
  const file = /^# (\S+)/.exec(yaml)?.[1] as string;
  mkdirSync(join(work, dirname(file)), { recursive: true });
  writeFileSync(join(work, file), yaml);
  const sh = block('sh');
  const start = sh.split('\n').find((line) => line.includes('npx sluice-server')) as string;
  const env = Object.fromEntries(
    start
      .split(' ')
      .filter((t) => t.includes('='))
      .map((t) => t.split('=') as [string, string]),
  );
  env.RUNTIME_ROOT = join(work, env.RUNTIME_ROOT as string);
  env.REDIS_URL = `127.0.0.1:${redis.port}`;
  // Free ports, a store deadline a busy test machine can meet (the quick start keeps the default),
  // and two workers whatever the machine's parallelism (the default on Redis).
  server = await spawnServer({
    ...env,
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_PORT: '0',
    SLUICE_TIMEOUT_MS: '2000',
    SLUICE_WORKERS: '2',
  });
  body = JSON.parse(/-d '([^']+)'/.exec(sh)?.[1] as string);
});
afterAll(async () => {
  await server?.stop();
  await redis?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('README quick start', () => {
  it('answers as documented: 200, 200, then 429 OVER_LIMIT', async () => {
    await inOneMinuteWindow();
    const first = await postJson(server.httpPort, body);
    expect(first.status).toBe(200);
    const documented = JSON.parse(block('json'));
    const reset = /^(\d+(\.\d+)?)s$/.exec((first.body as typeof documented).statuses[0].durationUntilReset);
    expect(Number(reset?.[1])).toBeLessThanOrEqual(60);
    const normalize = (answer: typeof documented) => ({
      ...answer,
      statuses: [{ ...answer.statuses[0], durationUntilReset: 'set' }],
    });
    expect(normalize(first.body)).toEqual(normalize(documented));
    expect((await postJson(server.httpPort, body)).status).toBe(200);
    const third = await postJson(server.httpPort, body);
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ overallCode: 'OVER_LIMIT' });
  });
});
