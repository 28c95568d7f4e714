/** Bundles a worker script of the cross-process suites with esbuild, for `fork`. */
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

/**
 * Bundles `test/core/<name>.ts` (ioredis left external) into the test cache; returns the path of
 * the bundled `.mjs`.
 */
export async function bundleWorker(name: string): Promise<string> {
  const outDir = join(root, 'node_modules/.cache/sluice-test');
  mkdirSync(outDir, { recursive: true });
  const script = join(outDir, `${name}.mjs`);
  await build({
    entryPoints: [join(here, `${name}.ts`)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: script,
    external: ['ioredis'],
    logLevel: 'silent',
  });
  return script;
}
