/**
 * A fault-injecting TCP proxy on 127.0.0.1 for failure tests: clients connect to the proxy,
 * the proxy connects to the real server, and the test switches what happens in between.
 *
 * Modes:
 * - `pass`: bytes flow as they come (plus `latencyMs`, when set, in both directions).
 * - `blackhole`: connections are accepted and kept open, but no byte moves in either
 *   direction; held bytes are delivered, in order, once the mode leaves `blackhole`
 *   (a network partition that heals, like TCP retransmission would). Use `reset` to drop them.
 * - `reset`: every open connection is reset (RST) and new connections are reset on accept.
 *
 * Byte order inside each connection is preserved across mode and latency changes.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** What the proxy does to traffic. */
export type FaultMode = 'pass' | 'blackhole' | 'reset';

/** Running totals since the proxy started (or since `resetCounters`). */
export interface FaultProxyCounters {
  /** Client connections accepted (reset-on-accept ones included). */
  accepted: number;
  /** Connections currently open. */
  open: number;
  /** Connections this proxy reset. */
  resets: number;
  /** Bytes delivered client -> server and server -> client. */
  bytesUp: number;
  bytesDown: number;
  /** Chunks that had to wait (latency or blackhole) before delivery. */
  delayedChunks: number;
}

/** A running proxy. */
export interface FaultProxy {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** `redis://127.0.0.1:<proxy port>` for Redis targets. */
  readonly url: string;
  readonly mode: FaultMode;
  readonly latencyMs: number;
  readonly counters: Readonly<FaultProxyCounters>;
  /** Switch mode; `reset` resets every open connection at once. */
  setMode(mode: FaultMode): void;
  /** Added one-way delay per chunk, both directions; 0 = none. */
  setLatency(ms: number): void;
  resetCounters(): void;
  /** Close the listener and destroy every connection. */
  close(): Promise<void>;
}

interface Held {
  readonly chunk: Buffer;
  readonly dueAt: number;
}

/** One direction of one connection: an ordered queue with release times. */
class Lane {
  private readonly queue: Held[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly target: Socket,
    private readonly proxy: ProxyState,
    private readonly onBytes: (n: number) => void,
  ) {}

  push(chunk: Buffer): void {
    const dueAt = Date.now() + this.proxy.latencyMs;
    if (this.queue.length === 0 && this.proxy.mode === 'pass' && this.proxy.latencyMs === 0) {
      this.deliver(chunk);
      return;
    }
    this.proxy.counters.delayedChunks++;
    this.queue.push({ chunk, dueAt });
    this.pump();
  }

  pump(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.proxy.mode !== 'pass') return;
    const now = Date.now();
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (head.dueAt > now) {
        this.timer = setTimeout(() => this.pump(), head.dueAt - now);
        return;
      }
      this.queue.shift();
      this.deliver(head.chunk);
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  private deliver(chunk: Buffer): void {
    if (this.target.destroyed) return;
    this.onBytes(chunk.length);
    this.target.write(chunk);
  }
}

interface ProxyState {
  mode: FaultMode;
  latencyMs: number;
  counters: FaultProxyCounters;
}

interface Pair {
  readonly client: Socket;
  readonly server: Socket;
  readonly up: Lane;
  readonly down: Lane;
}

function freshCounters(): FaultProxyCounters {
  return { accepted: 0, open: 0, resets: 0, bytesUp: 0, bytesDown: 0, delayedChunks: 0 };
}

/** Start a proxy on a free loopback port in front of `target`. */
export async function startFaultProxy(target: { host?: string; port: number }): Promise<FaultProxy> {
  const targetHost = target.host ?? '127.0.0.1';
  const state: ProxyState = { mode: 'pass', latencyMs: 0, counters: freshCounters() };
  const pairs = new Set<Pair>();

  const resetPair = (pair: Pair) => {
    pair.up.stop();
    pair.down.stop();
    if (!pair.client.destroyed) {
      state.counters.resets++;
      pair.client.resetAndDestroy();
    }
    if (!pair.server.destroyed) pair.server.destroy();
  };

  const server: Server = createServer({ noDelay: true }, (client) => {
    state.counters.accepted++;
    client.on('error', () => {});
    if (state.mode === 'reset') {
      state.counters.resets++;
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ host: targetHost, port: target.port, noDelay: true });
    upstream.on('error', () => {});
    const pair: Pair = {
      client,
      server: upstream,
      up: new Lane(upstream, state, (n) => {
        state.counters.bytesUp += n;
      }),
      down: new Lane(client, state, (n) => {
        state.counters.bytesDown += n;
      }),
    };
    pairs.add(pair);
    state.counters.open++;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      state.counters.open--;
      pairs.delete(pair);
      pair.up.stop();
      pair.down.stop();
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => pair.up.push(chunk));
    upstream.on('data', (chunk: Buffer) => pair.down.push(chunk));
    client.on('close', close);
    upstream.on('close', close);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    get mode() {
      return state.mode;
    },
    get latencyMs() {
      return state.latencyMs;
    },
    get counters() {
      return state.counters;
    },
    setMode(mode) {
      state.mode = mode;
      if (mode === 'reset') for (const pair of [...pairs]) resetPair(pair);
      if (mode === 'pass') {
        for (const pair of pairs) {
          pair.up.pump();
          pair.down.pump();
        }
      }
    },
    setLatency(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new Error(`fault proxy: latency must be >= 0 ms, got ${ms}`);
      state.latencyMs = ms;
    },
    resetCounters() {
      const open = state.counters.open;
      state.counters = freshCounters();
      state.counters.open = open;
    },
    async close() {
      for (const pair of [...pairs]) {
        pair.up.stop();
        pair.down.stop();
        pair.client.destroy();
        pair.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
