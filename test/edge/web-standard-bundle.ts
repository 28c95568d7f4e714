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
  /** Node globals used as free variables (`Buffer.from`, `process.env`, ...) outside a `typeof` test. */
  readonly nodeGlobals: string[];
  /** Node globals only feature-tested with `typeof` (`typeof global === 'object'`), which is harmless. */
  readonly guardedGlobals: string[];
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
  // `typeof g === "object" ? g : ...` and `typeof g !== "undefined" && g` only touch g where it exists.
  const guardIdiom = new RegExp(
    `typeof (${MARK}\\w+)\\s*[!=]==?\\s*["'](?:object|function|undefined)["']\\s*(?:\\?|&&)\\s*\\1\\b`,
    'g',
  );
  const unguardedCode = code
    .replace(guardIdiom, 'GUARDED')
    .replace(new RegExp(`typeof ${MARK}\\w+`, 'g'), 'GUARDED');
  const used = (text: string, name: string) => text.includes(`${MARK}${name}`);
  const nodeGlobals = NODE_GLOBALS.filter((name) => used(unguardedCode, name));
  const guardedGlobals = NODE_GLOBALS.filter((name) => used(code, name) && !used(unguardedCode, name));
  return { nodeImports: [...nodeImports].sort(), nodeGlobals, guardedGlobals, code };
}
