import { fileURLToPath } from 'node:url';
import { defineProject } from 'vitest/config';

// Tests run against core's source, not its build; the tests that spawn the bin use the build.
export default defineProject({
  resolve: {
    alias: [
      {
        find: /^@sluice\/core$/,
        replacement: fileURLToPath(new URL('../core/src/index.ts', import.meta.url)),
      },
      {
        find: /^@sluice\/core\/adapter$/,
        replacement: fileURLToPath(new URL('../core/src/adapter.ts', import.meta.url)),
      },
      {
        find: /^@sluice\/core\/node$/,
        replacement: fileURLToPath(new URL('../core/src/node/index.ts', import.meta.url)),
      },
    ],
  },
  test: {
    name: 'server',
    include: ['src/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
