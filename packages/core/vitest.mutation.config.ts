import { defineProject, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The core project as Stryker runs it (stryker.config.mjs): the same tests, with room for
 * instrumented code on a loaded machine (every mutant's code runs behind a switch, and
 * coverage is counted per test), so a slow property run is not taken for a failure. The
 * MemoryStore heap-bound test (a million keys, its own 90 s limit) is left out: instrumented it
 * cannot finish in time, and it measures memory, not decisions.
 */
export default mergeConfig(
  base,
  defineProject({
    test: {
      testTimeout: 60_000,
      hookTimeout: 60_000,
      exclude: ['**/node_modules/**', 'src/stores/memory-store.test.ts'],
    },
  }),
);
