/**
 * Stryker (JavaScript/TypeScript mutation testing) over @sluice/core's decision code:
 * the algorithms, the limiter, the keys and the HTTP verdict and header code with the
 * modules they import, tested by the core vitest project. Not part of CI; run it with
 * `npm run mutate:ts` (scripts/mutate-ts.mjs), which runs the groups below one after
 * another, or one group: `SLUICE_MUTATE_GROUP=keys npx stryker run`. See docs/testing.md.
 *
 * Each group keeps its own incremental file (reports/stryker-incremental-<group>.json):
 * a later run re-tests only the mutants whose code or covering tests changed.
 */
const src = 'packages/core/src';

/** The files mutated, by group. */
export const MUTATE_GROUPS = {
  keys: [`${src}/keys/*.ts`],
  http: [
    `${src}/http/verdict.ts`,
    `${src}/http/headers.ts`,
    `${src}/http/problem.ts`,
    `${src}/http/retry-after.ts`,
    `${src}/http/structured-fields.ts`,
  ],
  algorithms: [`${src}/algorithms/*.ts`],
  limiter: [`${src}/limiter/*.ts`],
};

const notMutated = [`!${src}/**/*.test.ts`, `!${src}/**/*.test-support.ts`, `!${src}/**/index.ts`];
// biome-ignore lint/suspicious/noUndeclaredEnvVars: read by Stryker when it loads this file, never by a turbo task
const group = process.env.SLUICE_MUTATE_GROUP;
if (group !== undefined && !(group in MUTATE_GROUPS)) {
  throw new Error(
    `stryker.config.mjs: SLUICE_MUTATE_GROUP must be one of ${Object.keys(MUTATE_GROUPS).join(', ')}, got ${group}`,
  );
}
const name = group ?? 'all';
const mutate = [...(group ? MUTATE_GROUPS[group] : Object.values(MUTATE_GROUPS).flat()), ...notMutated];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: './packages/core/vitest.mutation.config.ts', dir: 'packages/core' },
  mutate,
  coverageAnalysis: 'perTest',
  incremental: true,
  incrementalFile: `reports/stryker-incremental-${name}.json`,
  concurrency: 2,
  timeoutMS: 5000,
  dryRunTimeoutMinutes: 30,
  timeoutFactor: 3,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  ignorePatterns: [
    'apps',
    'bench',
    'docs',
    'reports',
    'packages/express',
    'packages/koa',
    'packages/nestjs',
    'packages/hono',
    '**/dist',
    '**/.turbo',
    'test-results.json',
  ],
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  thresholds: { high: 90, low: 85, break: null },
};
