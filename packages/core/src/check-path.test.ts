/**
 * What a plain check loads and runs. Loads: `createLimiter` with one token-bucket policy on a
 * `MemoryStore`, and `limiter.check`, bundled from the source as an app's bundler would (type-only
 * imports dropped, dynamic imports followed); the bundle is run, and every module it was built
 * from is read from the bundler's metafile: none of them is under `http/`. Runs: one
 * `limiter.check` with one token-bucket policy on a `RedisStore` over ioredis and a real
 * redis-server, from `limiter.check` to the Decision (the batch's flush and the reply included),
 * under V8's precise coverage: the source files with a function that ran are at most
 * `MAX_PLAIN_CHECK_FILES`, and exactly the ones docs/architecture.md lists for a plain check.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { useRedis } from '../../../test/support/redis-fixture.js';
import type { createLimiter } from './limiter/create-limiter.js';

const SRC = dirname(fileURLToPath(import.meta.url));
/** The most source files of core a plain check may run through. */
const MAX_PLAIN_CHECK_FILES = 20;
const ARCHITECTURE = join(SRC, '../../../docs/architecture.md');
const redis = useRedis();

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
/** Where the Redis check's bundle is written: below the repository, so `ioredis` resolves from it. */
const bundleDir = join(SRC, '../../../node_modules/.cache');
mkdirSync(bundleDir, { recursive: true });
const bundleScratch = mkdtempSync(join(bundleDir, 'sluice-check-path-'));
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  rmSync(bundleScratch, { recursive: true, force: true });
});

/** One limiter of one token-bucket policy on a RedisStore made by `createRedisStore` (ioredis). */
const PLAIN_REDIS_CHECK = `
import { createLimiter } from './limiter/create-limiter.js';
import { createRedisStore } from './node/ioredis.js';
export const plainLimiter = (client) =>
  createLimiter({
    store: createRedisStore(client),
    policies: [{ name: 'plain', algorithm: 'token-bucket', limit: 2, window: '1m' }],
  });
`;

/**
 * Bundles `PLAIN_REDIS_CHECK` from the source as the package's build does (esbuild, one module
 * scope: no import bindings to call through), with a source map, into a folder from which
 * `ioredis` resolves as the test's own; returns the bundle's module and a way to name the source
 * files whose functions ran during a call, read from V8's precise coverage (call counts, reset
 * when the call starts) and mapped to src/ through the source map, sorted.
 */
async function plainRedisBundle(): Promise<{
  plainLimiter: (client: unknown) => ReturnType<typeof createLimiter>;
  sourceFilesRunBy: (run: () => Promise<unknown>) => Promise<string[]>;
}> {
  const dir = bundleScratch;
  const outfile = join(dir, 'plain-redis-check.mjs');
  const bundle = await build({
    stdin: { contents: PLAIN_REDIS_CHECK, resolveDir: SRC, sourcefile: 'plain-redis-check.ts', loader: 'ts' },
    absWorkingDir: SRC,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'es2022',
    external: ['ioredis', '@opentelemetry/api'],
    sourcemap: 'external',
    outfile,
    write: false,
    logLevel: 'silent',
  });
  const code = bundle.outputFiles.find((f) => f.path === outfile)?.text ?? '';
  const map = JSON.parse(bundle.outputFiles.find((f) => f.path === `${outfile}.map`)?.text ?? '{}');
  writeFileSync(outfile, code);
  const sourceMap = new SourceMap(map);
  const lineStarts = [0];
  for (let i = 0; i < code.length; i++) if (code[i] === '\n') lineStarts.push(i + 1);
  /** The source file (relative to src/) of the bundle's code at `offset`. */
  const sourceAt = (offset: number): string | undefined => {
    let line = 0;
    for (let lo = 0, hi = lineStarts.length - 1; lo <= hi; ) {
      const mid = (lo + hi) >> 1;
      if ((lineStarts[mid] as number) <= offset) {
        line = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    const entry = sourceMap.findEntry(line, offset - (lineStarts[line] as number)) as {
      originalSource?: string;
    };
    if (entry.originalSource === undefined) return undefined;
    const path = entry.originalSource.startsWith('file:')
      ? fileURLToPath(entry.originalSource)
      : resolve(dir, entry.originalSource);
    return relative(SRC, path).split('\\').join('/');
  };
  const url = pathToFileURL(outfile).href;
  const sourceFilesRunBy = async (run: () => Promise<unknown>): Promise<string[]> => {
    const session = new Session();
    session.connect();
    try {
      await session.post('Profiler.enable');
      await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
      await session.post('Profiler.takePreciseCoverage');
      await run();
      const { result } = await session.post('Profiler.takePreciseCoverage');
      await session.post('Profiler.stopPreciseCoverage');
      const files = new Set<string>();
      for (const script of result.filter((s) => s.url === url)) {
        for (const fn of script.functions) {
          const range = fn.ranges[0];
          // The module's own body (offset 0) ran when it was imported, not in `run`.
          if (range === undefined || range.count === 0 || range.startOffset === 0) continue;
          const file = sourceAt(range.startOffset);
          if (file !== undefined) files.add(file);
        }
      }
      return [...files].sort();
    } finally {
      session.disconnect();
    }
  };
  return { ...(await import(url)), sourceFilesRunBy };
}

/** The files docs/architecture.md lists under "The files a plain check runs through", sorted. */
function documentedPlainCheckFiles(): string[] {
  const text = readFileSync(ARCHITECTURE, 'utf8');
  const section = text.split('## The files a plain check runs through')[1]?.split('\n## ')[0] ?? '';
  const block = section.split('```')[1] ?? '';
  return [...block.matchAll(/core\/src\/(\S+\.ts)/g)].map((m) => m[1] as string).sort();
}

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

  it(`runs one limiter.check on RedisStore (ioredis) through at most ${MAX_PLAIN_CHECK_FILES} source files, the ones docs/architecture.md lists`, async () => {
    const { plainLimiter, sourceFilesRunBy } = await plainRedisBundle();
    const limiter = plainLimiter(redis.client);
    // Warm: the script loaded, the connection up, every lazy part made.
    await limiter.check({ identity: 'warm' });
    await limiter.check({ identity: 'warm' });
    let allowed: boolean | undefined;
    const ran = await sourceFilesRunBy(async () => {
      allowed = (await limiter.check({ identity: 'plain' })).allowed;
    });
    expect(allowed).toBe(true);
    expect(ran).toContain('limiter/pipeline.ts');
    expect(ran).toContain('redis/script-batcher.ts');
    expect(ran).toContain('redis/transports/ioredis.ts');
    expect(ran.filter((file) => file.startsWith('http/'))).toEqual([]);
    expect(ran).toEqual(documentedPlainCheckFiles());
    expect(ran.length).toBeLessThanOrEqual(MAX_PLAIN_CHECK_FILES);
  });
});
