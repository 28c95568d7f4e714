import { defineConfig } from 'tsup';

// Decorator metadata (Nest's DI) needs swc: tsup uses it because tsconfig.json sets
// experimentalDecorators and emitDecoratorMetadata.
export default defineConfig({
  entry: ['src/main.ts', 'src/app.module.ts'],
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'node',
  // The shared example kit is TypeScript source: bundle it into the app.
  noExternal: ['@sluice/example-kit'],
});
