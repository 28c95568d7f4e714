/**
 * The HTTP side, as envoyproxy/ratelimit serves it: `GET /healthcheck` (200 `OK` when serving,
 * 500 otherwise), `POST /json` (ShouldRateLimit as proto3 JSON: 200, 429 when over the limit, 400
 * for a bad request, 500 when the store failed) and `GET /metrics` (Prometheus text).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { PROMETHEUS_CONTENT_TYPE } from '@sluice/core';
import { drainWithin } from './drain.js';
import { requestFromJson, responseToJson } from './json.js';
import { RlsRequestError } from './rls-types.js';
import type { RateLimitService } from './service.js';

const MAX_BODY_BYTES = 1024 * 1024;

function send(res: ServerResponse, statusCode: number, contentType: string, body: string): void {
  res.writeHead(statusCode, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new RlsRequestError('the body is larger than 1 MiB'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handleJson(
  service: RateLimitService,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    const response = await service.shouldRateLimit(requestFromJson(await readBody(req)));
    const code = response.overall_code === 'OVER_LIMIT' ? 429 : 200;
    send(res, code, 'application/json', JSON.stringify(responseToJson(response)));
  } catch (error) {
    const code = error instanceof RlsRequestError ? 400 : 500;
    send(res, code, 'text/plain; charset=utf-8', `${(error as Error).message}\n`);
  }
}

/** What `GET /metrics` answers: Prometheus text (several workers: all of them, aggregated). */
export type MetricsText = () => Promise<string>;

function sendMetrics(res: ServerResponse, metrics: MetricsText): void {
  metrics().then(
    (text) => send(res, 200, PROMETHEUS_CONTENT_TYPE, text),
    (error: unknown) =>
      send(res, 500, 'text/plain; charset=utf-8', `metrics unavailable: ${(error as Error).message}\n`),
  );
}

/**
 * An HTTP server for `service`, not yet listening. `serving` says what /healthcheck answers;
 * `metrics` what /metrics answers (default: this process's counters).
 */
export function createHttpServer(
  service: RateLimitService,
  serving: () => boolean,
  metrics?: MetricsText,
): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthcheck' && (req.method === 'GET' || req.method === 'HEAD')) {
      if (serving()) send(res, 200, 'text/plain; charset=utf-8', 'OK');
      else send(res, 500, 'text/plain; charset=utf-8', 'NOT SERVING');
    } else if (path === '/json' && req.method === 'POST') {
      void handleJson(service, req, res);
    } else if (path === '/metrics' && req.method === 'GET') {
      if (metrics === undefined) send(res, 200, PROMETHEUS_CONTENT_TYPE, service.stats.render());
      else sendMetrics(res, metrics);
    } else {
      send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
    }
  });
}

/** Listens on `host:port` (0: a free port) and resolves with the port. */
export function listenHttp(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}

/** Stops taking connections and resolves once the requests in flight are answered. */
export function drainHttp(server: Server, graceMs: number): Promise<void> {
  return drainWithin(
    graceMs,
    (done) => {
      server.close(() => done());
      server.closeIdleConnections();
    },
    () => server.closeAllConnections(),
  );
}
