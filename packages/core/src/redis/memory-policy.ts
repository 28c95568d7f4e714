/**
 * Reads Redis's `maxmemory-policy` once and warns (coded, once per process) when it is one of the
 * allkeys-* policies: a full Redis then evicts the state of identities in use, which start again
 * with a full quota. Managed Redis often forbids CONFIG: then nothing is said. Web-standard.
 */
import { report, type SluiceLogger, WARNING_CODES } from '../warn.js';

/** The part of an ioredis `Redis` this reads. */
interface ConfigClient {
  config(subcommand: 'GET', parameter: string): Promise<unknown>;
}

/** The part of an ioredis `Cluster` this reads. */
interface ClusterClient {
  readonly isCluster: true;
  readonly status?: string;
  nodes(role: 'master'): ConfigClient[];
  once?(event: 'ready', listener: () => void): unknown;
}

const isConfigClient = (c: unknown): c is ConfigClient =>
  typeof c === 'object' && c !== null && typeof (c as ConfigClient).config === 'function';

const isClusterClient = (c: unknown): c is ClusterClient =>
  typeof c === 'object' &&
  c !== null &&
  (c as ClusterClient).isCluster === true &&
  typeof (c as ClusterClient).nodes === 'function';

/** The policy one node reports, or undefined when CONFIG is not allowed or the reply is odd. */
async function policyOf(node: ConfigClient): Promise<string | undefined> {
  try {
    const reply = await node.config('GET', 'maxmemory-policy');
    const value = Array.isArray(reply) ? reply[1] : undefined;
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `maxmemory-policy` of every node `client` reaches (each primary of an ioredis `Cluster`,
 * or an ioredis `Redis`); empty for a client without CONFIG access. Never rejects.
 */
export async function readMaxmemoryPolicies(client: unknown): Promise<string[]> {
  let nodes: ConfigClient[];
  if (isClusterClient(client)) {
    if (client.status !== 'ready' && typeof client.once === 'function') {
      await new Promise<void>((resolve) => client.once?.('ready', resolve));
    }
    nodes = client.nodes('master');
  } else if (isConfigClient(client)) {
    nodes = [client];
  } else {
    return [];
  }
  const policies = await Promise.all(nodes.map(policyOf));
  return policies.filter((p): p is string => p !== undefined);
}

/**
 * Warns (`SLUICE_REDIS_ALLKEYS_EVICTION`; to `logger`, else once per process) when a node runs an
 * allkeys-* policy. Never rejects.
 * @returns the policies read (empty when CONFIG is not allowed)
 */
export async function warnOnEvictingPolicy(client: unknown, logger?: SluiceLogger): Promise<string[]> {
  const policies = await readMaxmemoryPolicies(client);
  const evicting = policies.find((p) => p.startsWith('allkeys-'));
  if (evicting !== undefined) {
    report(
      logger,
      'warn',
      WARNING_CODES.REDIS_ALLKEYS_EVICTION,
      `Redis maxmemory-policy is ${evicting}: when Redis reaches maxmemory it evicts the rate-limit ` +
        'state of identities in use, and an evicted identity starts again with a full quota. Give ' +
        'Sluice a Redis sized for active identities x policies x bytes per key, or use noeviction ' +
        'with fail modes chosen for a full Redis (docs/failure-modes.md, "Redis memory").',
      { maxmemoryPolicy: evicting },
    );
  }
  return policies;
}
