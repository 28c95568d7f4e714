/**
 * The `sluice-server` process: one process serving alone, or a primary and `SLUICE_WORKERS`
 * worker processes (node:cluster) sharing the gRPC and HTTP ports. Every worker reads and watches
 * the config itself, so a reload reaches each; SIGTERM or SIGINT to the primary drains every worker
 * and exits once all have; `GET /metrics` on any worker answers the sum over all workers
 * (prom-client's AggregatorRegistry); a worker that dies is logged and replaced. Worker logs carry
 * the worker's number and pid, never a request's descriptors.
 */
import cluster, { type Worker } from 'node:cluster';
import { registerPromClient } from '@sluice/core';
import { AggregatorRegistry, Registry } from 'prom-client';
import { loadConfigDir } from './config/load.js';
import type { MetricsText } from './http.js';
import { type Log, type RunningServer, startServer } from './server.js';
import type { ServerSettings } from './settings.js';

/** Writes a log line to stdout (info) or stderr (error). */
function consoleLog(level: 'info' | 'error', message: string): void {
  if (level === 'error') console.error(message);
  else console.log(message);
}

/** How long the primary waits past `SLUICE_DRAIN_MS` for its workers before it kills them. */
const STOP_MARGIN_MS = 5000;
/** How long the primary waits before replacing a worker that died before it was listening. */
const RESTART_DELAY_MS = 1000;
/** How long a worker waits for the primary's aggregated metrics. */
const METRICS_TIMEOUT_MS = 10_000;

/** Messages between the primary and its workers (prom-client's own travel beside them). */
type WorkerMessage =
  | { readonly type: 'sluice:listening'; readonly grpcPort: number; readonly httpPort: number }
  | { readonly type: 'sluice:metrics'; readonly id: number };
type PrimaryMessage = {
  readonly type: 'sluice:metrics';
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
};

/**
 * Starts the service in this process and drains it on SIGTERM or SIGINT, then exits (0 when the
 * drain went well). A start that fails exits 1 with the reason.
 */
export async function serveProcess(
  settings: ServerSettings,
  log: Log = consoleLog,
  metrics?: MetricsText,
): Promise<RunningServer> {
  let running: RunningServer;
  try {
    running = await startServer(settings, { log, ...(metrics === undefined ? {} : { metrics }) });
  } catch (error) {
    log('error', `sluice-server: cannot start: ${(error as Error).message}`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log('info', `sluice-server: ${signal}: draining calls in flight`);
    running.close().then(
      () => {
        log('info', 'sluice-server: stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log('error', `sluice-server: error while stopping: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  return running;
}

/** Asks the primary for every worker's metrics, aggregated; one request at a time per id. */
class PrimaryMetrics {
  private next = 0;
  private readonly pending = new Map<
    number,
    { resolve: (text: string) => void; reject: (e: Error) => void }
  >();

  constructor() {
    process.on('message', (message: PrimaryMessage) => this.answer(message));
  }

  private answer(message: PrimaryMessage): void {
    if (message?.type !== 'sluice:metrics') return;
    const waiting = this.pending.get(message.id);
    if (waiting === undefined) return;
    this.pending.delete(message.id);
    if (message.text === undefined) waiting.reject(new Error(message.error ?? 'no answer'));
    else waiting.resolve(message.text);
  }

  /** The aggregated Prometheus text. */
  read(): Promise<string> {
    const id = this.next++;
    const text = new Promise<string>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    const timer = setTimeout(
      () => this.answer({ type: 'sluice:metrics', id, error: 'the primary did not answer' }),
      METRICS_TIMEOUT_MS,
    );
    timer.unref();
    (process.send as (message: WorkerMessage) => void)({ type: 'sluice:metrics', id });
    return text.finally(() => clearTimeout(timer));
  }
}

/**
 * Runs one worker: the service on the shared ports, its counters offered to the primary's
 * aggregation, `/metrics` answered with every worker's sum.
 */
export async function runWorker(settings: ServerSettings): Promise<void> {
  const prefix = `sluice-server: worker ${cluster.worker?.id} (pid ${process.pid}): `;
  const log: Log = (level, message) => consoleLog(level, message.replace(/^sluice-server: /, prefix));
  const primary = new PrimaryMetrics();
  const running = await serveProcess(settings, log, () => primary.read());
  const registry = new Registry();
  registerPromClient(running.service.stats, registry);
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's worker side: it answers the primary's requests.
  new AggregatorRegistry();
  const ready: WorkerMessage = {
    type: 'sluice:listening',
    grpcPort: running.grpcPort,
    httpPort: running.httpPort,
  };
  (process.send as (message: WorkerMessage) => void)(ready);
}

/** The primary's view of its workers. */
class Primary {
  private readonly aggregator = new AggregatorRegistry();
  /** Workers that said they listen. */
  private readonly listening = new Set<Worker>();
  private started = false;
  private stopping = false;
  private failed = false;

  constructor(
    private readonly count: number,
    private readonly settings: ServerSettings,
    private readonly log: Log,
  ) {}

  start(): void {
    cluster.on('message', (worker, message: WorkerMessage) => this.onMessage(worker, message));
    cluster.on('exit', (worker, code, signal) => this.onExit(worker, code, signal));
    for (let i = 0; i < this.count; i++) this.fork();
    process.on('SIGTERM', () => this.stop('SIGTERM'));
    process.on('SIGINT', () => this.stop('SIGINT'));
  }

  private fork(): void {
    const worker = cluster.fork();
    this.log('info', `sluice-server: worker ${worker.id} (pid ${worker.process.pid}) started`);
  }

  private onMessage(worker: Worker, message: WorkerMessage): void {
    if (message?.type === 'sluice:listening') {
      this.listening.add(worker);
      if (!this.started && this.listening.size === this.count) {
        this.started = true;
        this.log(
          'info',
          `sluice-server: listening on grpc ${message.grpcPort} and http ${message.httpPort} (${this.count} workers)`,
        );
      }
    } else if (message?.type === 'sluice:metrics') {
      void this.sendMetrics(worker, message.id);
    }
  }

  private async sendMetrics(worker: Worker, id: number): Promise<void> {
    let reply: PrimaryMessage;
    try {
      reply = { type: 'sluice:metrics', id, text: await this.aggregator.clusterMetrics() };
    } catch (error) {
      reply = { type: 'sluice:metrics', id, error: (error as Error).message };
    }
    if (worker.isConnected()) worker.send(reply);
  }

  private onExit(worker: Worker, code: number | null, signal: string | null): void {
    const wasListening = this.listening.delete(worker);
    const how = signal === null ? `with code ${code}` : `on ${signal}`;
    if (this.stopping) {
      if (code !== 0) this.failed = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) this.exit();
    } else if (!this.started) {
      this.log('error', `sluice-server: cannot start: worker ${worker.id} exited ${how} before listening`);
      this.stop('a worker could not start', true);
    } else {
      this.log(
        'error',
        `sluice-server: worker ${worker.id} (pid ${worker.process.pid}) exited ${how}; starting a replacement`,
      );
      if (wasListening) this.fork();
      else setTimeout(() => this.fork(), RESTART_DELAY_MS);
    }
  }

  /** Drains every worker (each drains itself on SIGTERM), then exits: 1 when `failed` or a worker failed. */
  stop(reason: string, failed = false): void {
    if (this.stopping) return;
    this.stopping = true;
    this.failed = failed;
    this.log('info', `sluice-server: ${reason}: draining ${this.count} workers`);
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) this.exit();
    for (const worker of workers) worker?.process.kill('SIGTERM');
    const bound = setTimeout(() => {
      this.failed = true;
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    }, this.settings.drainMs + STOP_MARGIN_MS);
    bound.unref();
  }

  private exit(): void {
    this.log(
      this.failed ? 'error' : 'info',
      `sluice-server: stopped${this.failed ? ' (a worker failed)' : ''}`,
    );
    process.exit(this.failed ? 1 : 0);
  }
}

/**
 * Runs the primary of `count` workers. The config is checked here first, so a bad file stops the
 * start once (exit 1) rather than in every worker.
 */
export function runPrimary(settings: ServerSettings, count: number, log: Log = consoleLog): void {
  try {
    loadConfigDir(settings.configDir);
  } catch (error) {
    log('error', `sluice-server: cannot start: ${(error as Error).message}`);
    process.exit(1);
  }
  new Primary(count, settings, log).start();
}
