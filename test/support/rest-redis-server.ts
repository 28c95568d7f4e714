/**
 * A small Upstash-REST-compatible HTTP server in front of a real redis-server, for tests of
 * Redis over HTTP (edge runtimes). It speaks the parts of the protocol Sluice and
 * `@upstash/redis` use:
 *
 * - `POST /` with a JSON array body `["EVALSHA", sha1, numKeys, ...]`: one command;
 * - `POST /pipeline` with a JSON array of command arrays: one reply per command;
 * - `GET /<command>/<arg>/...` (URL-encoded path segments): one command;
 * - `Authorization: Bearer <token>` or the `_token` query parameter; anything else is
 *   `401 {"error":"Unauthorized"}`;
 * - replies `200 {"result": ...}`, or `400 {"error": "<Redis error>"}` (a pipeline answers 200
 *   with `{"error"}` in place of the failed command);
 * - `Upstash-Encoding: base64`: every string in the result is base64 except the status `OK`.
 *
 * Commands run through ioredis `call`, so every Redis command works. Listens on 127.0.0.1
 * on a free port; `stop()` closes the server and the Redis connection (not the Redis process).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';

/** Options of {@link startRestRedisServer}. */
export interface RestRedisServerOptions {
  /** The real Redis behind it, e.g. `redis://127.0.0.1:6390`. */
  readonly redisUrl: string;
  /** The bearer token clients must send. Defaults to a fixed test token. */
  readonly token?: string;
}

/** A running REST server. */
export interface RestRedisServer {
  /** Base URL, `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** Upper-cased command names in the order they were run (no arguments: keys hold identities). */
  readonly commands: string[];
  /** Number of HTTP requests answered, including refused ones. */
  readonly requestCount: () => number;
  /** Close the HTTP server and the Redis connection. */
  stop(): Promise<void>;
}

type Reply = { result: unknown } | { error: string };

function encodeBase64(value: unknown): unknown {
  if (typeof value === 'string')
    return value === 'OK' ? value : Buffer.from(value, 'utf8').toString('base64');
  if (Array.isArray(value)) return value.map(encodeBase64);
  return value;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function isCommand(value: unknown): value is (string | number)[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((part) => typeof part === 'string' || typeof part === 'number' || typeof part === 'boolean')
  );
}

/** Start the REST server in front of `options.redisUrl`. */
export async function startRestRedisServer(options: RestRedisServerOptions): Promise<RestRedisServer> {
  const token = options.token ?? 'sluice-test-token';
  const redis = new Redis(options.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  const commands: string[] = [];
  let requests = 0;

  async function run(command: (string | number)[], base64: boolean): Promise<Reply> {
    const [name, ...args] = command.map(String);
    commands.push(String(name).toUpperCase());
    try {
      const result = await redis.call(String(name), ...args);
      return { result: base64 ? encodeBase64(result) : result };
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requests++;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const header = req.headers.authorization;
    const authorized =
      header === undefined ? url.searchParams.get('_token') === token : header === `Bearer ${token}`;
    if (!authorized) return send(res, 401, { error: 'Unauthorized' });
    const base64 = String(req.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64';

    if (req.method === 'GET') {
      const parts = url.pathname
        .split('/')
        .filter((p) => p !== '')
        .map(decodeURIComponent);
      if (parts.length === 0) return send(res, 400, { error: 'ERR empty command' });
      const reply = await run(parts, base64);
      return send(res, 'error' in reply ? 400 : 200, reply);
    }
    if (req.method !== 'POST') return send(res, 405, { error: 'Method not allowed' });

    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return send(res, 400, { error: 'ERR failed to parse command' });
    }
    if (url.pathname === '/pipeline') {
      if (!Array.isArray(body) || !body.every(isCommand))
        return send(res, 400, { error: 'ERR invalid pipeline' });
      const replies: Reply[] = [];
      for (const command of body) replies.push(await run(command, base64));
      return send(res, 200, replies);
    }
    if (url.pathname !== '/') return send(res, 404, { error: 'Not found' });
    if (!isCommand(body)) return send(res, 400, { error: 'ERR failed to parse command' });
    const reply = await run(body, base64);
    return send(res, 'error' in reply ? 400 : 200, reply);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        send(res, 500, { error: error instanceof Error ? error.message : 'internal error' });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    token,
    commands,
    requestCount: () => requests,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      redis.disconnect();
    },
  };
}
