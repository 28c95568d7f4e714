/**
 * Guard: everything reachable from @sluice/core's entry and its adapter subpath (and the REST
 * client for edge runtimes) bundles for a Web-standard runtime with no `node:` import, no Buffer,
 * no process.
 * A `typeof x` feature test (as in @opentelemetry/api's `typeof global === "object"`) is allowed:
 * it runs on every runtime.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { inspectWebStandard } from './web-standard-bundle.js';

const coreEntry = fileURLToPath(new URL('../../packages/core/src/index.ts', import.meta.url));
const adapterEntry = fileURLToPath(new URL('../../packages/core/src/adapter.ts', import.meta.url));
const restClient = fileURLToPath(new URL('../../packages/core/src/redis/rest-client.ts', import.meta.url));
const here = fileURLToPath(new URL('.', import.meta.url));

describe('@sluice/core is Web-standard', () => {
  it('packages/core/src/index.ts bundles with no Node built-in and no Node global', async () => {
    const report = await inspectWebStandard({ entry: coreEntry });
    expect(report.nodeImports).toEqual([]);
    expect(report.nodeGlobals).toEqual([]);
  });

  it('packages/core/src/adapter.ts (@sluice/core/adapter, which the Hono adapter imports) bundles with no Node built-in and no Node global', async () => {
    const report = await inspectWebStandard({ entry: adapterEntry });
    expect(report.nodeImports).toEqual([]);
    expect(report.nodeGlobals).toEqual([]);
    expect(report.code).toContain('createRateLimitHandler');
  });

  it('the REST client bundles with no Node built-in and no Node global', async () => {
    const report = await inspectWebStandard({ entry: restClient });
    expect(report.nodeImports).toEqual([]);
    expect(report.nodeGlobals).toEqual([]);
    expect(report.code).toContain('createRestEvalClient');
  });

  it('the guard itself catches a node: import, Buffer, process and globalThis.process', async () => {
    const report = await inspectWebStandard({
      resolveDir: here,
      contents: [
        "import { createHash } from 'node:crypto';",
        "import { join } from 'path';",
        "export const a = createHash('sha1').update(join('a', 'b')).digest('hex');",
        "export const b = Buffer.from('x').toString('base64');",
        'export const c = process.env.X;',
        'export const d = globalThis.process?.pid;',
        // Locals and property names with the same names are not Node globals.
        'export function e(process: number, obj: { Buffer: number }) { return process + obj.Buffer; }',
        'export const f = new ArrayBuffer(8);',
        // A typeof feature test runs anywhere; a use after it does not.
        "export const g = typeof global === 'object' ? global : {};",
        "export const h = typeof setImmediate === 'function' ? 1 : setImmediate(() => {});",
      ].join('\n'),
    });
    expect(report.nodeImports).toEqual(['node:crypto', 'path']);
    expect(report.nodeGlobals).toEqual(['Buffer', 'process', 'setImmediate']);
    expect(report.guardedGlobals).toEqual(['global']);
  });

  it('the guard passes code that only uses Web standards', async () => {
    const report = await inspectWebStandard({
      resolveDir: here,
      contents: [
        'export const a = btoa(String.fromCharCode(...new TextEncoder().encode("x")));',
        'export const b = crypto.subtle.digest("SHA-1", new Uint8Array(1));',
        'export function c(process: number) { return process; }',
      ].join('\n'),
    });
    expect(report.nodeImports).toEqual([]);
    expect(report.nodeGlobals).toEqual([]);
  });
});
