/**
 * Test support: a rate limit service client that is not Node. scripts/rls_client.py drives the
 * service through gRPC's C core (Debian's python3-grpcio) with google.protobuf message classes
 * built from the shipped protos. A machine without a Python 3 that imports grpc fails these tests
 * with a message saying what to install; they never skip.
 */
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { grpcPython } from '../../../scripts/prerequisites.mjs';
import { packageDefinition } from './protos.js';

const SCRIPT = fileURLToPath(new URL('../scripts/rls_client.py', import.meta.url));

/**
 * The Python that imports grpc, found as `npm test`'s prerequisites check finds it
 * (`SLUICE_PYTHON`, then `python3` on PATH, then Debian's `/usr/bin/python3`).
 * @throws Error saying what to install when there is none
 */
export function findPython(): string {
  const python = grpcPython();
  if (python !== undefined) return python;
  throw new Error(
    'the Python client tests need a Python 3 with grpc (Debian: apt-get install python3-grpcio; or set SLUICE_PYTHON); none of $SLUICE_PYTHON, python3, /usr/bin/python3 imports grpc',
  );
}

/** The environment of the Python client: the shipped protos as serialized FileDescriptorProtos. */
function pythonEnv(): NodeJS.ProcessEnv {
  const definition = packageDefinition()['envoy.service.ratelimit.v3.RateLimitRequest'] as {
    fileDescriptorProtos: Buffer[];
  };
  const descriptors = JSON.stringify(definition.fileDescriptorProtos.map((b) => b.toString('base64')));
  return { ...process.env, SLUICE_RLS_DESCRIPTORS: descriptors };
}

/** What the Python client answered: the response in proto3 JSON, or the gRPC error. */
export interface PythonAnswer {
  readonly response?: unknown;
  readonly error?: { readonly code: string; readonly details: string };
}

/** One Python process answering ShouldRateLimit calls asked over its stdin, one a line. */
export class PythonRls {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting = new Map<number, (answer: PythonAnswer) => void>();
  private next = 0;
  private buffered = '';
  private stderr = '';

  constructor() {
    this.child = spawn(findPython(), [SCRIPT, 'serve'], { env: pythonEnv() });
    this.child.stdout.on('data', (chunk: Buffer) => this.read(chunk.toString()));
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.child.on('exit', (code) => {
      for (const wake of this.waiting.values())
        wake({ error: { code: `exit ${code}`, details: this.stderr } });
      this.waiting.clear();
    });
  }

  private read(text: string): void {
    this.buffered += text;
    for (let end = this.buffered.indexOf('\n'); end >= 0; end = this.buffered.indexOf('\n')) {
      const answer = JSON.parse(this.buffered.slice(0, end)) as PythonAnswer & { id: number };
      this.buffered = this.buffered.slice(end + 1);
      this.waiting.get(answer.id)?.(answer);
      this.waiting.delete(answer.id);
    }
  }

  private send(message: object): Promise<PythonAnswer> {
    const id = this.next++;
    const answer = new Promise<PythonAnswer>((resolve) => this.waiting.set(id, resolve));
    this.child.stdin.write(`${JSON.stringify({ id, ...message })}\n`);
    return answer;
  }

  /** ShouldRateLimit on 127.0.0.1:`port` with `request` in proto3 JSON. */
  ask(port: number, request: unknown): Promise<PythonAnswer> {
    return this.send({ address: `127.0.0.1:${port}`, request });
  }

  /** Closes the connection to 127.0.0.1:`port` (as a client does before the service stops). */
  async disconnect(port: number): Promise<void> {
    await this.send({ address: `127.0.0.1:${port}`, close: true });
  }

  close(): void {
    this.child.stdin.end();
  }
}

/** What a Python load run reports. */
export interface PythonLoadReport {
  readonly processes: number;
  readonly calls: number;
  readonly seconds: number;
  readonly callsPerSecond: number;
  /** Answers by code: `OK`, `OVER_LIMIT`, or a gRPC status name. */
  readonly codes: Readonly<Record<string, number>>;
}

/** How a Python load run is shaped. */
export interface PythonLoadOptions {
  readonly processes: number;
  readonly callsPerProcess: number;
  readonly inFlight: number;
  readonly maxSeconds: number;
}

/** Runs `processes` Python processes against 127.0.0.1:`port`, each its own connection. */
export function pythonLoad(
  port: number,
  request: unknown,
  options: PythonLoadOptions,
): Promise<PythonLoadReport> {
  const args = [
    SCRIPT,
    'load',
    `127.0.0.1:${port}`,
    JSON.stringify(request),
    '--processes',
    String(options.processes),
    '--calls',
    String(options.callsPerProcess),
    '--in-flight',
    String(options.inFlight),
    '--max-seconds',
    String(options.maxSeconds),
  ];
  return new Promise((resolve, reject) => {
    const run = { env: pythonEnv(), timeout: (options.maxSeconds + 30) * 1000 };
    execFile(findPython(), args, run, (error, stdout, stderr) => {
      if (error) reject(new Error(`the Python load run failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as PythonLoadReport);
    });
  });
}
