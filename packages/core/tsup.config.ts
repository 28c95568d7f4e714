import { defineConfig } from 'tsup';

export default defineConfig({
  // `@sluice/core` (what an app uses), `@sluice/core/adapter` (what adapter authors add; both
  // Web-standard) and `@sluice/core/node` (ioredis helpers); `internal` is for bench/ only (not in
  // package.json's exports, no types).
  entry: {
    index: 'src/index.ts',
    adapter: 'src/adapter.ts',
    'node/index': 'src/node/index.ts',
    internal: 'src/internal.ts',
  },
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts', adapter: 'src/adapter.ts', 'node/index': 'src/node/index.ts' } },
  sourcemap: true,
  clean: true,
  target: 'es2022',
  // Shared chunks keep one class of each (RedisStore, MemoryStore, the errors) for every entry,
  // in ESM and CJS alike.
  splitting: true,
  external: ['ioredis'],
});
