/**
 * The algorithm registry: every algorithm Sluice implements, one module each. Policy validation,
 * MemoryStore, the store checks and the embedded decide script (packages/core/scripts/embed-lua.mjs)
 * all read it. To add an algorithm: its module, its Lua file, one line here, its tests.
 */
import { concurrency } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import type { AlgorithmModule } from './module.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';

/** The modules in registry order: the decide script's order of Lua files, MemoryStore's table codes. */
const MODULES = [tokenBucket, gcra, slidingWindow, fixedWindow, slidingLog, concurrency] as const;

/** The name of an algorithm a policy can use: one of `ALGORITHM_NAMES`. */
export type Algorithm = (typeof MODULES)[number]['name'];

/** Every algorithm module in registry order (state types opaque: a store keeps what `charge()` returned). */
export const ALGORITHM_LIST: readonly AlgorithmModule<Algorithm>[] = Object.freeze(
  MODULES as unknown as AlgorithmModule<Algorithm>[],
);

/** Every algorithm's name, in registry order. */
export const ALGORITHM_NAMES: readonly Algorithm[] = Object.freeze(ALGORITHM_LIST.map((m) => m.name));

/** Every algorithm module by name. Index it with a name checked by `isAlgorithm` (or typed `Algorithm`). */
export const ALGORITHMS: { readonly [A in Algorithm]: AlgorithmModule<A> } = (() => {
  const byName: Record<string, AlgorithmModule<Algorithm>> = {};
  for (const module of ALGORITHM_LIST) byName[module.name] = module;
  return Object.freeze(byName) as { readonly [A in Algorithm]: AlgorithmModule<A> };
})();

/** The algorithms that can wait for a turn (`maxWaitMs`): those whose module reserves one. */
export const WAITING_ALGORITHMS: readonly Algorithm[] = Object.freeze(
  ALGORITHM_LIST.filter((m) => m.reserve !== undefined).map((m) => m.name),
);

const NAMES: ReadonlySet<unknown> = new Set(ALGORITHM_NAMES);

/** True when `name` is a registered algorithm's name. */
export function isAlgorithm(name: unknown): name is Algorithm {
  return NAMES.has(name);
}
