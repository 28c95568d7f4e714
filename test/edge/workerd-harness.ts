/**
 * Runs a worker in workerd through miniflare: bundles a TypeScript entry with esbuild the way
 * Workers tooling does, and lets it reach only loopback addresses (the REST test server).
 */
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { EDGE_BUILD_OPTIONS } from './web-standard-bundle.js';

/** The workspace packages, bundled from source so no build step is needed first. */
export const SOURCE_ALIASES: Record<string, string> = {
  '@sluice/core': fileURLToPath(new URL('../../packages/core/src/index.ts', import.meta.url)),
  '@sluice/core/adapter': fileURLToPath(new URL('../../packages/core/src/adapter.ts', import.meta.url)),
  '@sluice/hono': fileURLToPath(new URL('../../packages/hono/src/index.ts', import.meta.url)),
};

/** A worker entry: a .ts file, or inline TypeScript with the folder its imports resolve from. */
export type WorkerSource = string | { readonly contents: string; readonly resolveDir: string };

/** A worker running in workerd. */
export interface RunningWorker {
  readonly mf: Miniflare;
  /** The bundled worker source. */
  readonly code: string;
  /** Send one request to the worker (method and headers only: enough for these tests). */
  fetch(path: string, init?: { method?: string; headers?: Record<string, string> }): Promise<Response>;
  dispose(): Promise<void>;
}

/** Bundle a worker for workerd, with `@sluice/*` taken from source. */
export async function bundleWorker(source: WorkerSource): Promise<string> {
  const result = await build({
    ...EDGE_BUILD_OPTIONS,
    ...(typeof source === 'string'
      ? { entryPoints: [source] }
      : { stdin: { contents: source.contents, resolveDir: source.resolveDir, loader: 'ts' as const } }),
    alias: SOURCE_ALIASES,
  });
  const code = result.outputFiles?.[0]?.text;
  if (code === undefined) throw new Error('esbuild produced no output for the worker');
  return code;
}

/** Bundle `source` and start it in workerd with string `bindings` (its `env`). */
export async function startWorker(
  source: WorkerSource,
  bindings: Record<string, string>,
): Promise<RunningWorker> {
  const code = await bundleWorker(source);
  const mf = new Miniflare({
    modules: [{ type: 'ESModule', path: 'worker.mjs', contents: code }],
    compatibilityDate: '2026-04-01',
    bindings,
    // fetch() from the worker may reach loopback only: the REST test server on 127.0.0.1.
    outboundService: { network: { allow: ['local'] } },
  });
  await mf.ready;
  return {
    mf,
    code,
    fetch: (path, init) =>
      mf.dispatchFetch(`http://worker.test${path}`, init) as unknown as Promise<Response>,
    dispose: () => mf.dispose(),
  };
}

/** The first fenced `ts` block of a Markdown text that contains `marker`. */
export function codeBlock(markdown: string, marker: string): string {
  for (const match of markdown.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const code = match[1] ?? '';
    if (code.includes(marker)) return code;
  }
  throw new Error(`no \`\`\`ts block containing ${JSON.stringify(marker)}`);
}
