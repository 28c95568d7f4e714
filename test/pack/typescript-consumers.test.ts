/**
 * Every subpath export of every package type-checks from the packed tarballs in the
 * TypeScript setups users have: the Nest CLI's classic `module: commonjs` with node10
 * resolution, node16 and nodenext (a CommonJS and an ES module file each), and bundler.
 * The consumer imports each subpath and uses a value from the ones every Redis example uses.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/apps.js';
import { type PackedProject, packAll, subpathSpecifiers } from './packed.js';

const run = promisify(execFile);
const TSC = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** The settings, and the consumer files each compiles. */
const SETTINGS = [
  {
    name: 'node10',
    compilerOptions: { module: 'commonjs', moduleResolution: 'node' },
    files: ['consumer.ts'],
  },
  {
    name: 'node16',
    compilerOptions: { module: 'node16', moduleResolution: 'node16' },
    files: ['consumer.cts', 'consumer.mts'],
  },
  {
    name: 'nodenext',
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' },
    files: ['consumer.cts', 'consumer.mts'],
  },
  {
    name: 'bundler',
    compilerOptions: { module: 'esnext', moduleResolution: 'bundler' },
    files: ['consumer.ts'],
  },
] as const;

/**
 * What the Nest CLI's tsconfig sets besides module resolution, made strict. `skipLibCheck`
 * as there (checking every .d.ts takes seconds per setting); the `@ts-expect-error` lines of
 * the consumer fail if a declaration resolved to `any` instead of the package's types.
 */
const COMMON_OPTIONS = {
  target: 'ES2022',
  strict: true,
  esModuleInterop: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  skipLibCheck: true,
  noEmit: true,
  types: ['node'],
};

function consumerSource(specifiers: readonly string[]): string {
  const namespaces = specifiers.map(
    (specifier, i) => `import * as module${i} from '${specifier}'; // ${specifier}`,
  );
  return [
    "import { createLimiter, MemoryStore, type Store } from '@sluice/core';",
    "import { createRedisStore } from '@sluice/core/node';",
    ...namespaces,
    '',
    "export const store: Store = createRedisStore('redis://127.0.0.1:6379', { maxBatch: 8 });",
    "export const limiter = createLimiter({ policies: [{ name: 'api', limit: 5, window: '1m' }], store: new MemoryStore() });",
    '// @ts-expect-error a number is not a Redis target',
    'createRedisStore(42);',
    '// @ts-expect-error policies is a list',
    "createLimiter({ policies: 'api' });",
    `export const modules: object[] = [${specifiers.map((_, i) => `module${i}`).join(', ')}];`,
    '',
  ].join('\n');
}

let project: PackedProject;

beforeAll(async () => {
  project = await packAll();
  const specifiers = project.packages.flatMap(subpathSpecifiers);
  const source = consumerSource(specifiers);
  await writeFile(join(project.root, 'package.json'), '{ "private": true, "type": "commonjs" }\n');
  for (const file of ['consumer.ts', 'consumer.cts', 'consumer.mts']) {
    await writeFile(join(project.root, file), source);
  }
  for (const setting of SETTINGS) {
    const tsconfig = {
      compilerOptions: { ...COMMON_OPTIONS, ...setting.compilerOptions },
      files: setting.files,
    };
    await writeFile(join(project.root, `tsconfig.${setting.name}.json`), JSON.stringify(tsconfig, null, 2));
  }
}, 120_000);

afterAll(async () => {
  await project?.remove();
});

describe('TypeScript consumers of the packed packages', () => {
  it('imports every subpath export of every package', () => {
    const specifiers = project.packages.flatMap(subpathSpecifiers);
    expect(specifiers).toContain('@sluice/core/node');
    expect(specifiers.length).toBeGreaterThanOrEqual(project.packages.length + 1);
  });

  // tsc parses some 700 declaration files per setting: seconds each, more on a busy machine.
  it.each(SETTINGS)('compiles with tsc under $name', { timeout: 180_000 }, async (setting) => {
    const result = await run(
      process.execPath,
      [TSC, '-p', `tsconfig.${setting.name}.json`, '--pretty', 'false'],
      {
        cwd: project.root,
      },
    ).then(
      ({ stdout }) => ({ ok: true, output: stdout }),
      (error: { stdout?: string; message: string }) => ({ ok: false, output: error.stdout || error.message }),
    );
    expect(result.output).toBe('');
    expect(result.ok).toBe(true);
  });
});
