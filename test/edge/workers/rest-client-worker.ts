/**
 * Test worker: counts requests per `?key=` in Redis over HTTP with the REST EvalClient,
 * EVALSHA first and EVAL when the script is missing, as RedisStore does.
 */
import { createRestEvalClient } from '../../../packages/core/src/redis/rest-client.js';

interface Env {
  REST_URL: string;
  REST_TOKEN: string;
}

const SCRIPT = "local n = redis.call('INCR', KEYS[1]); redis.call('PEXPIRE', KEYS[1], ARGV[1]); return n";

async function sha1Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-1', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const client = createRestEvalClient({ url: env.REST_URL, token: env.REST_TOKEN });
    const key = new URL(request.url).searchParams.get('key') ?? 'default';
    const sha = await sha1Hex(SCRIPT);
    let fellBack = false;
    let count: unknown;
    try {
      count = await client.evalsha(sha, 1, `edge:${key}`, 60_000);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) {
        return Response.json(
          { error: error instanceof Error ? error.message : String(error) },
          { status: 500 },
        );
      }
      fellBack = true;
      count = await client.eval(SCRIPT, 1, `edge:${key}`, 60_000);
    }
    return Response.json({
      count,
      fellBack,
      runtime: typeof navigator === 'undefined' ? 'unknown' : navigator.userAgent,
    });
  },
};
