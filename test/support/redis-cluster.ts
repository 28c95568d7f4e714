/**
 * Starts a private Redis Cluster for tests: 3 primaries + 3 replicas (by default) on free
 * loopback ports, built with `redis-cli --cluster create`, stopped by PID. Every node is a
 * plain `startRedis()` process with cluster mode switched on, so nothing outside the test's
 * own temporary directories is touched.
 */
import { execFile } from 'node:child_process';
import { canListen } from './free-port.js';
import { type RedisProcess, startRedis } from './redis-server.js';

/** The Cluster bus listens on the client port + 10000; ports must leave room for it. */
const BUS_PORT_OFFSET = 10_000;

/** One node of the running cluster. */
export interface ClusterNode {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly pid: number;
}

/** A running cluster. */
export interface RedisCluster {
  /** Every node, in start order (the first `primaries` were created as primaries). */
  readonly nodes: readonly ClusterNode[];
  /** Seed nodes for ioredis `new Cluster(seeds)`. */
  readonly seeds: readonly { host: string; port: number }[];
  /** `host:port,host:port,...`, the form the example apps read from `REDIS_CLUSTER_NODES`. */
  readonly nodesEnv: string;
  /** Milliseconds the cluster took to start and settle. */
  readonly startupMs: number;
  /** Current role of every live node, read from CLUSTER NODES. */
  topology(): Promise<ClusterTopology>;
  /** Kill one node with SIGKILL (a crash: no failover handshake, no final writes). */
  killNode(port: number): Promise<void>;
  /** Resolves once every live node reports `cluster_state:ok` and all slots are served. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Stop every node by PID and remove their directories. */
  stop(): Promise<void>;
}

/** Who serves what, as CLUSTER NODES reports it. */
export interface ClusterTopology {
  readonly primaries: readonly { port: number; slots: readonly (readonly [number, number])[] }[];
  readonly replicas: readonly { port: number; primaryPort: number | undefined }[];
}

/** Options for {@link startRedisCluster}. */
export interface StartRedisClusterOptions {
  /** Number of primaries; default 3. */
  readonly primaries?: number;
  /** Replicas per primary; default 1. */
  readonly replicasPerPrimary?: number;
  /** `cluster-node-timeout` in ms; default 2000 (failure detection, hence failover, speed). */
  readonly nodeTimeoutMs?: number;
  /** Time allowed for the cluster to settle; default 60 s. */
  readonly startTimeoutMs?: number;
}

/** Run redis-cli and return its stdout. */
export function redisCli(args: readonly string[], timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', [...args], { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`redis-cli ${args.join(' ')} failed: ${error.message} ${stderr}`));
      else resolve(stdout);
    });
  });
}

/** redis-cli against one loopback node; errors become an empty string (node down). */
async function nodeCli(port: number, ...args: string[]): Promise<string> {
  try {
    return await redisCli(['-h', '127.0.0.1', '-p', String(port), ...args], 3000);
  } catch {
    return '';
  }
}

/**
 * `count` distinct ports whose port and bus port (+10000) were free a moment ago. Picked at random
 * in 12000..22000 (bus ports 22000..32000): below Linux's ephemeral range (32768+), so neither
 * outgoing connections nor `listen(0)` elsewhere can take them between the check and the bind.
 */
export async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let attempt = 0; ports.length < count && attempt < 2000; attempt++) {
    const port = 12_000 + Math.floor(Math.random() * 10_000);
    if (ports.some((p) => Math.abs(p - port) < 2)) continue;
    if ((await canListen(port)) && (await canListen(port + BUS_PORT_OFFSET))) ports.push(port);
  }
  if (ports.length < count) throw new Error(`could not find ${count} free cluster ports`);
  return ports;
}

function parseTopology(text: string): ClusterTopology {
  const byId = new Map<string, number>();
  const rows = text
    .trim()
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => line.split(' '));
  for (const row of rows) {
    const port = Number(row[1]?.split('@')[0]?.split(':')[1]);
    if (row[0]) byId.set(row[0], port);
  }
  const primaries: { port: number; slots: [number, number][] }[] = [];
  const replicas: { port: number; primaryPort: number | undefined }[] = [];
  for (const row of rows) {
    const port = Number(row[1]?.split('@')[0]?.split(':')[1]);
    const flags = row[2] ?? '';
    // `fail` = agreed dead; `fail?` (suspected) nodes are still listed.
    if (flags.split(',').includes('fail')) continue;
    if (flags.includes('master')) {
      const slots = row
        .slice(8)
        .filter((s) => !s.startsWith('['))
        .map((s) => {
          const [a, b] = s.split('-');
          return [Number(a), Number(b ?? a)] as [number, number];
        });
      if (slots.length > 0) primaries.push({ port, slots });
    } else if (flags.includes('slave')) {
      replicas.push({ port, primaryPort: byId.get(row[3] ?? '') });
    }
  }
  primaries.sort((a, b) => (a.slots[0]?.[0] ?? 0) - (b.slots[0]?.[0] ?? 0));
  return { primaries, replicas };
}

/**
 * Start a Redis Cluster on loopback and wait until it serves every slot and every replica
 * has synced (`master_link_status:up`). Throws, after stopping what it started, if it does not settle.
 */
export async function startRedisCluster(options: StartRedisClusterOptions = {}): Promise<RedisCluster> {
  // A port taken between the check and the bind fails one attempt; try once more on fresh ports.
  try {
    return await startOnce(options);
  } catch (error) {
    console.warn(`redis cluster: first start failed (${String(error)}); retrying on fresh ports`);
    return startOnce(options);
  }
}

async function startOnce(options: StartRedisClusterOptions): Promise<RedisCluster> {
  const started = Date.now();
  const primaryCount = options.primaries ?? 3;
  const replicasPerPrimary = options.replicasPerPrimary ?? 1;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2000;
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const total = primaryCount * (1 + replicasPerPrimary);
  const ports = await freeClusterPorts(total);

  const processes = new Map<number, RedisProcess>();
  const killed = new Set<number>();
  const stopAll = async () => {
    await Promise.all([...processes.values()].map((p) => p.stop()));
    processes.clear();
  };

  try {
    const results = await Promise.allSettled(
      ports.map((port) =>
        startRedis({
          port,
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            String(nodeTimeoutMs),
            // Keys on healthy primaries stay available while one shard fails over.
            '--cluster-require-full-coverage',
            'no',
          ],
        }),
      ),
    );
    for (const result of results) {
      if (result.status === 'fulfilled') processes.set(result.value.port, result.value);
    }
    const failed = results.find((r) => r.status === 'rejected');
    if (failed && failed.status === 'rejected') throw failed.reason;

    await redisCli(
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicasPerPrimary),
        '--cluster-yes',
      ],
      startTimeoutMs,
    );

    const cluster: RedisCluster = {
      nodes: ports.map((port) => ({ host: '127.0.0.1', port, pid: processes.get(port)!.pid })),
      seeds: ports.map((port) => ({ host: '127.0.0.1', port })),
      nodesEnv: ports.map((p) => `127.0.0.1:${p}`).join(','),
      startupMs: 0,
      async topology() {
        const live = ports.filter((p) => !killed.has(p));
        for (const port of live) {
          const text = await nodeCli(port, 'cluster', 'nodes');
          if (text) return parseTopology(text);
        }
        throw new Error('no cluster node answered CLUSTER NODES');
      },
      async killNode(port) {
        const node = processes.get(port);
        if (!node) throw new Error(`no cluster node on port ${port}`);
        killed.add(port);
        process.kill(node.pid, 'SIGKILL');
        await node.stop();
        processes.delete(port);
      },
      async waitHealthy(timeoutMs = startTimeoutMs) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const live = ports.filter((p) => !killed.has(p));
          const infos = await Promise.all(live.map((p) => nodeCli(p, 'cluster', 'info')));
          const clusterOk = infos.every(
            (i) => i.includes('cluster_state:ok') && i.includes('cluster_slots_ok:16384'),
          );
          let replicasUp = clusterOk;
          if (clusterOk) {
            const repl = await Promise.all(live.map((p) => nodeCli(p, 'info', 'replication')));
            replicasUp = repl.every((r) => !r.includes('role:slave') || r.includes('master_link_status:up'));
          }
          if (clusterOk && replicasUp) return;
          if (Date.now() > deadline) {
            throw new Error(
              `redis cluster not healthy within ${timeoutMs} ms: ${infos.map((i) => i.split('\n')[0]).join(' | ')}`,
            );
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      },
      stop: stopAll,
    };
    await cluster.waitHealthy(startTimeoutMs);
    return { ...cluster, startupMs: Date.now() - started };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
