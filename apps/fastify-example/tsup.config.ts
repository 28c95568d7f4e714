import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/main.ts', 'src/app.ts'],
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'node',
  // The shared example kit is TypeScript source: bundle it into the app.
  noExternal: ['@sluice/example-kit'],
});
