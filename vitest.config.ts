import { defineConfig } from 'vitest/config';

/** One root config; each workspace keeps its own vitest.config.ts as a project. */
export default defineConfig({
  test: {
    projects: ['packages/*', 'test', 'compat/nest10', 'compat/nest11'],
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results.json' },
  },
});
