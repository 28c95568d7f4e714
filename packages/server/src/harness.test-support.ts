/**
 * Test support: config folders in temporary directories, a real gRPC client built from the
 * shipped protos, the service started in-process or as the real bin in its own OS process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ChannelOptions,
  credentials,
  type GrpcObject,
  loadPackageDefinition,
  type ServiceClientConstructor,
} from '@grpc/grpc-js';
import { packageDefinition } from './protos.js';
import type { RlsDescriptor, RlsRequest, RlsResponse } from './rls-types.js';
import { type RunningServer, startServer } from './server.js';
import { readSettings } from './settings.js';

/** A runtime root with `ratelimit/config/<name>` files: the layout envoyproxy/ratelimit reads. */
export interface RuntimeDir {
  readonly root: string;
  readonly configDir: string;
  /** Writes (or replaces) one config file. */
  write(name: string, text: string): void;
  remove(): void;
}

/** A fresh runtime root holding `files`. */
export function runtimeDir(files: Readonly<Record<string, string>>): RuntimeDir {
  const root = mkdtempSync(join(tmpdir(), 'sluice-rls-'));
  const configDir = join(root, 'ratelimit', 'config');
  mkdirSync(configDir, { recursive: true });
  const dir: RuntimeDir = {
    root,
    configDir,
    write: (name, text) => writeFileSync(join(configDir, name), text),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
  for (const [name, text] of Object.entries(files)) dir.write(name, text);
  return dir;
}

/** The environment of a service on free loopback ports reading `dir`. */
export function serviceEnv(
  dir: RuntimeDir,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    GRPC_PORT: '0',
    PORT: '0',
    RUNTIME_ROOT: dir.root,
    RUNTIME_SUBDIRECTORY: 'ratelimit',
    RUNTIME_WATCH_ROOT: 'false',
    // A generous store deadline: these tests check decisions, and a busy test machine can take
    // longer than the 100 ms default for one Redis call. Tests of the deadline set their own.
    SLUICE_TIMEOUT_MS: '2000',
    // One process unless a test asks for workers.
    SLUICE_WORKERS: '1',
    ...extra,
  };
}

/** Starts the service in this process. */
export function startInProcess(env: Readonly<Record<string, string>>): Promise<RunningServer> {
  return startServer(readSettings(env), { log: () => {} });
}

/** A gRPC client of `RateLimitService` and `Health`. */
export interface RlsClient {
  shouldRateLimit(
    request: Partial<RlsRequest> & { descriptors: readonly Partial<RlsDescriptor>[] },
  ): Promise<RlsResponse>;
  health(): Promise<string>;
  close(): void;
}

type Unary = (
  request: unknown,
  options: { deadline: number },
  callback: (error: Error | null, reply: unknown) => void,
) => void;

function constructorAt(root: GrpcObject, path: string): ServiceClientConstructor {
  let node: unknown = root;
  for (const part of path.split('.')) node = (node as Record<string, unknown>)[part];
  return node as ServiceClientConstructor;
}

/**
 * A real gRPC client on 127.0.0.1:`port`. Clients share one connection unless `options` says
 * otherwise (`{ 'grpc.use_local_subchannel_pool': 1 }`: a connection of its own).
 */
export function rlsClient(port: number, options: ChannelOptions = {}): RlsClient {
  const root = loadPackageDefinition(packageDefinition());
  const address = `127.0.0.1:${port}`;
  const rls = new (constructorAt(root, 'envoy.service.ratelimit.v3.RateLimitService'))(
    address,
    credentials.createInsecure(),
    options,
  );
  const health = new (constructorAt(root, 'grpc.health.v1.Health'))(
    address,
    credentials.createInsecure(),
    options,
  );
  const call = <T>(client: unknown, method: string, request: unknown): Promise<T> =>
    new Promise((resolve, reject) => {
      const fn = (client as Record<string, Unary>)[method] as Unary;
      fn.call(client, request, { deadline: Date.now() + 5000 }, (error, reply) =>
        error ? reject(error) : resolve(reply as T),
      );
    });
  return {
    shouldRateLimit: (request) => call<RlsResponse>(rls, 'ShouldRateLimit', request),
    health: async () => (await call<{ status: string }>(health, 'Check', { service: '' })).status,
    close: () => {
      rls.close();
      health.close();
    },
  };
}

/** A descriptor from `key=value` pairs. */
export function descriptor(...pairs: string[]): { entries: { key: string; value: string }[] } {
  return {
    entries: pairs.map((pair) => {
      const at = pair.indexOf('=');
      return at < 0 ? { key: pair, value: '' } : { key: pair.slice(0, at), value: pair.slice(at + 1) };
    }),
  };
}

/** The real `sluice-server` bin (the build) running as its own OS process. */
export interface ServerProcess {
  readonly child: ChildProcess;
  readonly grpcPort: number;
  readonly httpPort: number;
  /** Everything it printed so far. */
  output(): string;
  /** Waits until its output matches `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/**
 * Spawns `node dist/bin.js` with `env` and waits for its `listening on` line (with workers, the
 * primary's, once every worker listens).
 */
export async function spawnServer(env: Readonly<Record<string, string>>): Promise<ServerProcess> {
  const child = spawn(process.execPath, [BIN], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'pipe',
  });
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = async (pattern: RegExp, timeoutMs = 15_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(text)) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`no ${pattern} in output:\n${text}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const listening = /^sluice-server: listening on grpc (\d+) and http (\d+)/m;
  await waitFor(listening);
  const ports = listening.exec(text) as RegExpExecArray;
  return {
    child,
    grpcPort: Number(ports[1]),
    httpPort: Number(ports[2]),
    output: () => text,
    waitFor,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** POST /json on 127.0.0.1:`port`: the status and the parsed body (text when not JSON). */
export async function postJson(port: number, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}/json`, { method: 'POST', body: JSON.stringify(body) });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/**
 * Waits for the next minute window when less than `marginMs` is left of the current one, so a
 * test counting against a per-minute fixed window never sees it roll over midway.
 */
export async function inOneMinuteWindow(marginMs = 5000): Promise<void> {
  const leftMs = 60_000 - (Date.now() % 60_000);
  if (leftMs < marginMs) await new Promise((r) => setTimeout(r, leftMs + 50));
}

/** The value of one series (name and labels, as exposed) in Prometheus text; undefined when absent. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
