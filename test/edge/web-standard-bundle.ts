/**
 * Bundles an entry the way edge tooling does (esbuild, neutral platform, `workerd`/`worker`/
 * `browser` conditions) and reports what a Web-standard runtime would lack: imports of
 * Node built-ins, and free references to `Buffer`, `process` and other Node globals.
 */
import { builtinModules } from 'node:module';
import { type BuildOptions, build, type Plugin } from 'esbuild';

/** What a bundle reaches that edge runtimes do not have. */
export interface WebStandardReport {
  /** Node built-in modules imported anywhere in the bundle (`node:fs`, `crypto`, ...). */
  readonly nodeImports: string[];
  /** Node globals referenced as free variables (`Buffer`, `process`, ...). */
  readonly nodeGlobals: string[];
  /** The bundled code. */
  readonly code: string;
}

const NODE_GLOBALS = ['Buffer', 'process', 'global', '__dirname', '__filename', 'require', 'setImmediate'];
const MARK = '__SLUICE_NODE_GLOBAL__';
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** esbuild options matching how Workers tooling bundles for workerd. */
export const EDGE_BUILD_OPTIONS: BuildOptions = {
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  mainFields: ['browser', 'module', 'main'],
  conditions: ['workerd', 'worker', 'browser'],
  write: false,
  logLevel: 'silent',
};

/** Bundle `entry` (a file path) or `contents` (inline TS) and report Node dependencies. */
export async function inspectWebStandard(
  input: { entry: string } | { contents: string; resolveDir: string },
): Promise<WebStandardReport> {
  const nodeImports = new Set<string>();
  const recordNode: Plugin = {
    name: 'record-node-builtins',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (!builtins.has(args.path)) return undefined;
        nodeImports.add(args.path);
        return { path: args.path, external: true };
      });
    },
  };
  const define: Record<string, string> = {};
  for (const name of NODE_GLOBALS) {
    define[name] = `${MARK}${name}`;
    define[`globalThis.${name}`] = `${MARK}${name}`;
  }
  const result = await build({
    ...EDGE_BUILD_OPTIONS,
    ...('entry' in input
      ? { entryPoints: [input.entry] }
      : { stdin: { contents: input.contents, resolveDir: input.resolveDir, loader: 'ts' } }),
    define,
    plugins: [recordNode],
  });
  const code = result.outputFiles?.[0]?.text ?? '';
  const nodeGlobals = NODE_GLOBALS.filter((name) => code.includes(`${MARK}${name}`));
  return { nodeImports: [...nodeImports].sort(), nodeGlobals, code };
}
