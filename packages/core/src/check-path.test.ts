/**
 * What a plain check loads at run time: `createLimiter` with one token-bucket policy on a
 * `MemoryStore`, and `limiter.check`. The entry is bundled from the source as an app's bundler
 * would (type-only imports dropped, dynamic imports followed), the bundle is run, and every
 * module it was built from is read from the bundler's metafile: none of them is under `http/`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));

/** One limiter, one token bucket of 2, three checks of one identity. */
const PLAIN_CHECK = `
import { createLimiter } from './limiter/create-limiter.js';
import { MemoryStore } from './stores/memory-store.js';
const limiter = createLimiter({
  store: new MemoryStore(),
  policies: [{ name: 'plain', algorithm: 'token-bucket', limit: 2, window: '1m' }],
});
export const allowed = [];
for (let i = 0; i < 3; i++) allowed.push((await limiter.check({ identity: 'a' })).allowed);
`;

const scratch = mkdtempSync(join(tmpdir(), 'sluice-check-path-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the plain check path', () => {
  it('runs createLimiter and limiter.check without loading any http/ module', async () => {
    const bundle = await build({
      stdin: { contents: PLAIN_CHECK, resolveDir: SRC, sourcefile: 'plain-check.ts', loader: 'ts' },
      absWorkingDir: SRC,
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const file = join(scratch, 'plain-check.mjs');
    writeFileSync(file, bundle.outputFiles[0]?.text ?? '');
    const run = (await import(pathToFileURL(file).href)) as { allowed: boolean[] };
    expect(run.allowed).toEqual([true, true, false]);

    const loaded = Object.keys(bundle.metafile.inputs);
    expect(loaded).toContain('limiter/create-limiter.ts');
    expect(loaded).toContain('stores/memory-store.ts');
    expect(loaded.filter((module) => module.startsWith('http/'))).toEqual([]);
  });
});
