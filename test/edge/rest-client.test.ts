/**
 * The Upstash REST EvalClient against the REST test server in front of a real redis-server:
 * EVALSHA, EVAL, NOSCRIPT surfacing, response encodings, auth and error hygiene.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createRestEvalClient,
  decodeBase64Result,
  fromUpstashRedis,
  RestRedisError,
  sanitizeRedisErrorMessage,
  type UpstashRedisLike,
} from '../../packages/core/src/redis/rest-client.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { type RestRedisServer, startRestRedisServer } from '../support/rest-redis-server.js';

const ECHO_SCRIPT =
  "redis.call('INCRBY', KEYS[1], ARGV[1]); return {KEYS[1], redis.call('GET', KEYS[1]), ARGV[2], 7}";
const ECHO_SHA = createHash('sha1').update(ECHO_SCRIPT).digest('hex');

let redis: RedisProcess;
let rest: RestRedisServer;

beforeAll(async () => {
  redis = await startRedis();
  rest = await startRestRedisServer({ redisUrl: redis.url, token: 'edge-token' });
});

afterAll(async () => {
  await rest?.stop();
  await redis?.stop();
});

/** One plain command through the REST server, as any Upstash client would send it. */
async function restCommand(...command: string[]): Promise<unknown> {
  const res = await fetch(rest.url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${rest.token}` },
    body: JSON.stringify(command),
  });
  const body = (await res.json()) as { result?: unknown; error?: string };
  if (body.error !== undefined) throw new Error(body.error);
  return body.result;
}

beforeEach(async () => {
  await restCommand('FLUSHALL');
  await restCommand('SCRIPT', 'FLUSH');
  rest.commands.length = 0;
});

describe('createRestEvalClient', () => {
  for (const responseEncoding of ['base64', 'none'] as const) {
    it(`runs EVAL then EVALSHA with keys and args in order (encoding ${responseEncoding})`, async () => {
      const client = createRestEvalClient({ url: rest.url, token: rest.token, responseEncoding });
      const key = 'sluice:{tenant é}:burst';
      await expect(client.eval(ECHO_SCRIPT, 1, key, 2, 'ünïcode ✓')).resolves.toEqual([
        key,
        '2',
        'ünïcode ✓',
        7,
      ]);
      await expect(client.evalsha(ECHO_SHA, 1, key, 3, 'x')).resolves.toEqual([key, '5', 'x', 7]);
      expect(rest.commands).toEqual(['EVAL', 'EVALSHA']);
    });
  }

  it('surfaces a missing script as an error whose message starts with NOSCRIPT', async () => {
    const client = createRestEvalClient({ url: rest.url, token: rest.token });
    const error = await client.evalsha(ECHO_SHA, 1, 'k', 1, 'a').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RestRedisError);
    expect((error as Error).message.startsWith('NOSCRIPT')).toBe(true);
    expect((error as RestRedisError).status).toBe(400);
  });

  it('falls back: after SCRIPT FLUSH, EVALSHA fails with NOSCRIPT and EVAL loads it again', async () => {
    const client = createRestEvalClient({ url: rest.url, token: rest.token });
    await client.eval(ECHO_SCRIPT, 1, 'k', 1, 'a');
    await expect(client.evalsha(ECHO_SHA, 1, 'k', 1, 'a')).resolves.toEqual(['k', '2', 'a', 7]);
    await expect(restCommand('SCRIPT', 'FLUSH')).resolves.toBe('OK');
    await expect(client.evalsha(ECHO_SHA, 1, 'k', 1, 'a')).rejects.toThrow(/^NOSCRIPT/);
    await expect(client.eval(ECHO_SCRIPT, 1, 'k', 1, 'a')).resolves.toEqual(['k', '3', 'a', 7]);
    await expect(client.evalsha(ECHO_SHA, 1, 'k', 1, 'a')).resolves.toEqual(['k', '4', 'a', 7]);
  });

  it('rejects a wrong token with 401 and never puts the token in the error', async () => {
    const client = createRestEvalClient({ url: rest.url, token: 'wrong-secret-token' });
    const error = (await client.eval('return 1', 0).catch((e: unknown) => e)) as RestRedisError;
    expect(error).toBeInstanceOf(RestRedisError);
    expect(error.status).toBe(401);
    expect(error.message).not.toContain('wrong-secret-token');
    expect(error.message).not.toContain('edge-token');
  });

  it('reports a Redis script error without echoing keys or arguments', async () => {
    const client = createRestEvalClient({ url: rest.url, token: rest.token });
    const error = (await client
      .eval("return redis.error_reply('ERR boom')", 1, 'secret-identity', 'secret-arg')
      .catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/boom/);
    expect(error.message).not.toContain('secret-identity');
    expect(error.message).not.toContain('secret-arg');
  });

  it('sends the documented request: POST JSON array of strings, bearer token, encoding header', async () => {
    const seen: { url: string; init: RequestInit }[] = [];
    const client = createRestEvalClient({
      url: rest.url,
      token: rest.token,
      fetch: (url, init) => {
        seen.push({ url, init });
        return fetch(url, init);
      },
    });
    await client.evalsha(ECHO_SHA, 1, 'k', 1, 'a').catch(() => undefined);
    expect(seen).toHaveLength(1);
    const [call] = seen;
    expect(call?.url).toBe(rest.url);
    expect(call?.init.method).toBe('POST');
    expect(JSON.parse(String(call?.init.body))).toEqual(['EVALSHA', ECHO_SHA, '1', 'k', '1', 'a']);
    expect(call?.init.headers).toMatchObject({
      Authorization: `Bearer ${rest.token}`,
      'Content-Type': 'application/json',
      'Upstash-Encoding': 'base64',
    });
  });

  it('fails clearly on a reply that is not JSON, or has neither result nor error', async () => {
    const html = createRestEvalClient({
      url: rest.url,
      token: rest.token,
      fetch: async () => new Response('<html>bad gateway</html>', { status: 502 }),
    });
    await expect(html.eval('return 1', 0)).rejects.toThrow('HTTP 502 with a non-JSON body');
    const empty = createRestEvalClient({
      url: rest.url,
      token: rest.token,
      fetch: async () => Response.json({}),
    });
    await expect(empty.eval('return 1', 0)).rejects.toThrow('neither "result" nor "error"');
  });

  it('validates its options at construction, naming the option', () => {
    expect(() => createRestEvalClient({ url: '', token: 't' })).toThrow('"url" must be a non-empty string');
    expect(() => createRestEvalClient({ url: 'redis://127.0.0.1:6379', token: 't' })).toThrow(
      '"url" must be an absolute http(s) URL, got "redis://127.0.0.1:6379"',
    );
    expect(() => createRestEvalClient({ url: 'not a url', token: 't' })).toThrow('"url" must be an absolute');
    expect(() => createRestEvalClient({ url: rest.url, token: '' })).toThrow(
      '"token" must be a non-empty string',
    );
    expect(() =>
      createRestEvalClient({ url: rest.url, token: 't', responseEncoding: 'hex' as unknown as 'none' }),
    ).toThrow('"responseEncoding" must be');
  });
});

describe('fromUpstashRedis', () => {
  /** A client with @upstash/redis' eval signatures, speaking the REST protocol (no mocks of Redis). */
  function upstashShaped(): UpstashRedisLike & { calls: { keys: string[]; args: unknown[] }[] } {
    const calls: { keys: string[]; args: unknown[] }[] = [];
    const post = async (command: unknown[]) => {
      const res = await fetch(rest.url, {
        method: 'POST',
        headers: { Authorization: `Bearer ${rest.token}` },
        body: JSON.stringify(command),
      });
      const body = (await res.json()) as { result?: unknown; error?: string };
      if (body.error !== undefined) throw new Error(`${body.error}, command was: ${JSON.stringify(command)}`);
      return body.result;
    };
    return {
      calls,
      evalsha: (sha, keys, args) => {
        calls.push({ keys, args });
        return post(['EVALSHA', sha, keys.length, ...keys, ...args]);
      },
      eval: (script, keys, args) => {
        calls.push({ keys, args });
        return post(['EVAL', script, keys.length, ...keys, ...args]);
      },
    };
  }

  it('splits the first numKeys arguments into keys and the rest into args', async () => {
    const upstash = upstashShaped();
    const client = fromUpstashRedis(upstash);
    await expect(client.eval(ECHO_SCRIPT, 1, 'k1', 4, 'z')).resolves.toEqual(['k1', '4', 'z', 7]);
    await expect(client.evalsha(ECHO_SHA, 1, 'k1', 1, 'y')).resolves.toEqual(['k1', '5', 'y', 7]);
    expect(upstash.calls).toEqual([
      { keys: ['k1'], args: ['4', 'z'] },
      { keys: ['k1'], args: ['1', 'y'] },
    ]);
  });

  it('turns a missing script into NOSCRIPT without the echoed command', async () => {
    const client = fromUpstashRedis(upstashShaped());
    const error = (await client.evalsha(ECHO_SHA, 1, 'secret-identity', 1).catch((e: unknown) => e)) as Error;
    expect(error.message.startsWith('NOSCRIPT')).toBe(true);
    expect(error.message).not.toContain('secret-identity');
  });

  it('rejects something that is not a client', () => {
    expect(() => fromUpstashRedis({} as UpstashRedisLike)).toThrow('fromUpstashRedis: "redis" must be');
  });
});

describe('helpers', () => {
  it('sanitizeRedisErrorMessage puts NOSCRIPT first and drops echoes', () => {
    expect(sanitizeRedisErrorMessage('NOSCRIPT No matching script. Please use EVAL.')).toBe(
      'NOSCRIPT No matching script. Please use EVAL.',
    );
    expect(sanitizeRedisErrorMessage('ERR noscript No matching script, command was: ["evalsha","k"]')).toBe(
      'NOSCRIPT No matching script',
    );
    expect(sanitizeRedisErrorMessage('ERR wrong type\nstack')).toBe('ERR wrong type');
    expect(sanitizeRedisErrorMessage('')).toBe('Redis command failed');
  });

  it('decodeBase64Result decodes nested strings, keeps OK, numbers and null', () => {
    expect(decodeBase64Result(['MQ==', ['w6k='], 3, null, 'OK'])).toEqual(['1', ['é'], 3, null, 'OK']);
  });
});
