/**
 * The shapes of the decide script: which lua/ files each generated decide script is built from.
 * One script carries every algorithm (the full script: any call, any mix of policies) and one per
 * algorithm of the registry carries that algorithm alone, so a call whose policies all use one
 * algorithm runs a chunk without the others' code (a chunk's top level runs on every call: the
 * other algorithms' functions and tables cost every call of the full script). The decide features
 * (shadow, bans, slots, waits, lease takes, request records) stay in every shape: code that a call
 * does not reach costs nothing at run time (measured, bench/README.md), while a feature cut out
 * would have to be refused. Every shape is built from the same lua/ files, so an edit there
 * reaches every shape. Read by embed-lua.mjs (which writes the scripts) and by
 * scripts/mutate-lua.mjs (which names the shapes each mutant reaches).
 */
import { build } from 'esbuild';

/** The algorithm registry's exports (`ALGORITHM_LIST`, `LUA_COMMON_RESULT_FIELDS`, ...), bundled in memory. */
export async function importRegistry(registryFile) {
  const bundle = await build({
    entryPoints: [registryFile],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
  });
  const code = bundle.outputFiles[0].text;
  return import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`);
}

/**
 * The decide script's shapes: `{ name, modules }`, the full script first (`name` 'all', every
 * module of the registry in its order), then one per algorithm (`name` the algorithm's).
 */
export function decideShapes(algorithmList) {
  return [
    { name: 'all', modules: [...algorithmList] },
    ...algorithmList.map((module) => ({ name: module.name, modules: [module] })),
  ];
}

/** The parts of a shape's decide script in order; `null` is the part generated from the registry. */
export function decidePartsOf(shape) {
  return ['common.lua', ...shape.modules.map((m) => m.lua.file), null, 'decide.lua'];
}
