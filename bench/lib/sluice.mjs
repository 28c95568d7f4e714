/**
 * Loads the built Sluice packages if they are there. The benchmarks run whatever parts have
 * landed and mark the rest "pending" instead of failing.
 */

/** Imports a module, or returns undefined with the reason. */
async function tryImport(specifier) {
  try {
    return { module: await import(specifier) };
  } catch (error) {
    return { error: error instanceof Error ? error.message.split('\n')[0] : String(error) };
  }
}

/**
 * `{ core, node, missing[] }`: `core` is `@sluice/core`, `node` is `@sluice/core/node`; `missing`
 * names the exports a suite needs that are not available yet.
 */
export async function loadSluice() {
  const core = await tryImport('@sluice/core');
  const node = await tryImport('@sluice/core/node');
  const c = core.module ?? {};
  const n = node.module ?? {};
  const missing = [];
  if (core.error) missing.push(`@sluice/core (${core.error})`);
  for (const name of ['createLimiter', 'definePolicy', 'DECIDE_SCRIPT', 'encodeScriptArgs', 'MemoryStore']) {
    if (c[name] === undefined) missing.push(name);
  }
  if (typeof n.createRedisStore !== 'function') missing.push('@sluice/core/node createRedisStore');
  return { core: c, node: n, missing };
}

/** The storage key Sluice uses for `identity` under `policy` (core's builder when exported). */
export function storageKey(core, prefix, identity, policy) {
  if (typeof core.buildKey === 'function') return core.buildKey(prefix, identity, policy);
  return `${prefix}:{${identity}}:${policy.name}`;
}
