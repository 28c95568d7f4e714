/**
 * The Web-standard guard: bundles this package's entry (and the core entry it reaches, from
 * source) the way edge tooling does, and fails if the output imports a Node built-in or
 * references Buffer or process.
 */
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ENTRY = fileURLToPath(new URL('./index.ts', import.meta.url));
// Core's entries, from source.
const CORE_ENTRY = fileURLToPath(new URL('../../core/src/index.ts', import.meta.url));
const CORE_ADAPTER_ENTRY = fileURLToPath(new URL('../../core/src/adapter.ts', import.meta.url));
const NODE_GLOBALS = ['Buffer', 'process'];
const MARK = '__NODE_GLOBAL_';
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

interface Findings {
  nodeImports: string[];
  nodeGlobals: string[];
  bytes: number;
}

async function inspect(input: { entry: string } | { contents: string }): Promise<Findings> {
  const nodeImports = new Set<string>();
  const plugin: Plugin = {
    name: 'web-standard-guard',
    setup(b) {
      b.onResolve({ filter: /^@sluice\/core$/ }, () => ({ path: CORE_ENTRY }));
      b.onResolve({ filter: /^@sluice\/core\/adapter$/ }, () => ({ path: CORE_ADAPTER_ENTRY }));
      b.onResolve({ filter: /.*/ }, (args) => {
        if (!builtins.has(args.path) && !args.path.startsWith('node:')) return undefined;
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
    ...('entry' in input
      ? { entryPoints: [input.entry] }
      : {
          stdin: {
            contents: input.contents,
            resolveDir: fileURLToPath(new URL('.', import.meta.url)),
            loader: 'ts',
          },
        }),
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'browser', 'import'],
    write: false,
    logLevel: 'silent',
    define,
    plugins: [plugin],
  });
  const code = result.outputFiles?.[0]?.text ?? '';
  return {
    nodeImports: [...nodeImports].sort(),
    nodeGlobals: NODE_GLOBALS.filter((name) => code.includes(`${MARK}${name}`)),
    bytes: code.length,
  };
}

describe('@sluice/hono is Web-standard', () => {
  it('bundles for platform neutral with no node: import, Buffer or process', async () => {
    const findings = await inspect({ entry: ENTRY });
    expect(findings.bytes).toBeGreaterThan(1000); // the middleware and core are really in it
    expect(findings.nodeImports).toEqual([]);
    expect(findings.nodeGlobals).toEqual([]);
  });

  it('the guard itself notices a node: import, a bare built-in, Buffer and process', async () => {
    const findings = await inspect({
      contents: [
        "import { createHash } from 'node:crypto';",
        "import { EventEmitter } from 'events';",
        "export const a = createHash('sha1').update(Buffer.from('x')).digest('hex');",
        'export const b = process.env.X;',
        'export const c = new EventEmitter();',
      ].join('\n'),
    });
    expect(findings.nodeImports).toEqual(['events', 'node:crypto']);
    expect(findings.nodeGlobals).toEqual(['Buffer', 'process']);
  });
});
