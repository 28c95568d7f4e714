import { defineConfig } from 'tsup';

export default defineConfig({
  // `@sluice/core` (Web-standard) and `@sluice/core/node` (ioredis helpers).
  entry: { index: 'src/index.ts', 'node/index': 'src/node/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  // Shared chunks keep one RedisStore class for both entries, in ESM and CJS alike.
  splitting: true,
  external: ['ioredis'],
});
