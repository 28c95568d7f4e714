/**
 * Runs a worker in workerd through miniflare: bundles a TypeScript entry with esbuild the way
 * Workers tooling does, and lets it reach only loopback addresses (the REST test server).
 */
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { EDGE_BUILD_OPTIONS } from './web-standard-bundle.js';

/** A worker running in workerd. */
export interface RunningWorker {
  readonly mf: Miniflare;
  /** The bundled worker source. */
  readonly code: string;
  /** Send one request to the worker (method and headers only: enough for these tests). */
  fetch(path: string, init?: { method?: string; headers?: Record<string, string> }): Promise<Response>;
  dispose(): Promise<void>;
}

/** Bundle `entry` (a .ts file) for workerd. */
export async function bundleWorker(entry: string): Promise<string> {
  const result = await build({ ...EDGE_BUILD_OPTIONS, entryPoints: [entry] });
  const code = result.outputFiles?.[0]?.text;
  if (code === undefined) throw new Error(`esbuild produced no output for ${entry}`);
  return code;
}

/** Bundle `entry` and start it in workerd with string `bindings` (its `env`). */
export async function startWorker(entry: string, bindings: Record<string, string>): Promise<RunningWorker> {
  const code = await bundleWorker(entry);
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
