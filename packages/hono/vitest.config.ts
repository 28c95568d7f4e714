import { fileURLToPath } from 'node:url';
import { defineProject } from 'vitest/config';

// Tests run against core's source, not its build.
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
  test: { name: 'hono', include: ['src/**/*.test.ts'] },
});
