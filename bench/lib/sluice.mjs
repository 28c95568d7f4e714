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
 * The core of one build, as the benchmarks read it: the main entry, the adapter subpath and the
 * build's `internal.js` (the decide script and its codec, which the package does not export).
 * Earlier builds exported all of it from the main entry and have neither of the other two.
 */
export async function coreOfBuild(indexUrl) {
  const parts = await Promise.all(
    ['index.js', 'adapter.js', 'internal.js'].map((file) => tryImport(new URL(file, indexUrl).href)),
  );
  if (parts[0].error) return { error: parts[0].error };
  return { module: Object.assign({}, ...parts.map((part) => part.module ?? {})) };
}

/**
 * `{ core, node, missing[] }`: `core` is `@sluice/core` (with its adapter subpath and the build's
 * internals, see `coreOfBuild`), `node` is `@sluice/core/node`; `missing` names the exports a suite
 * needs that are not available yet.
 */
export async function loadSluice() {
  const core = await coreOfBuild(import.meta.resolve('@sluice/core'));
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
