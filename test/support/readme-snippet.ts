/**
 * Runs a README's (or a doc's) quick start as written: bundled from source, in a child process on a
 * free port. TypeScript goes through swc (legacy decorators with metadata, as Nest needs; plain
 * TypeScript for the other adapters). Every README test uses it.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Options, transform, transformFile } from '@swc/core';
import { build, type Plugin } from 'esbuild';
import { startApp } from './apps.js';

const SWC: Options = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
  },
  module: { type: 'es6' },
  swcrc: false,
  configFile: false,
};

/** Compiles every bundled .ts file with swc, so decorator metadata survives bundling. */
const swcDecorators: Plugin = {
  name: 'swc-decorators',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => ({
      contents: (await transformFile(args.path, SWC)).code,
      loader: 'js',
    }));
  },
};

/** The first ```ts block after the heading that starts with `heading`. */
export function codeBlockAfter(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}`);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const match = /```ts\n([\s\S]*?)```/.exec(markdown.slice(start));
  if (match?.[1] === undefined) throw new Error(`no ts block after "${heading}"`);
  return match[1];
}

/** A started snippet. */
export interface RunningSnippet {
  readonly url: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Bundles `source` (TypeScript) with `@sluice/*` taken from `aliases` (source files), leaves
 * other packages to Node, writes it below `outDir` and runs it with PORT set; resolves once
 * it prints `listening on <port>`.
 */
export async function runSnippet(
  source: string,
  options: { outDir: string; aliases: Record<string, string>; timeoutMs?: number },
): Promise<RunningSnippet> {
  mkdirSync(options.outDir, { recursive: true });
  const result = await build({
    stdin: {
      contents: (await transform(source, SWC)).code,
      loader: 'js',
      resolveDir: options.outDir,
      sourcefile: 'readme-snippet.js',
    },
    plugins: [swcDecorators],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
    alias: options.aliases,
    packages: 'external',
  });
  const file = join(options.outDir, 'readme-snippet.mjs');
  writeFileSync(file, result.outputFiles?.[0]?.text ?? '');
  // Started as the example apps are (apps.ts): its own environment kept, stopped by PID.
  return startApp(
    {
      name: 'readme-snippet',
      dir: options.outDir,
      command: [process.execPath, file],
      builtFile: 'readme-snippet.mjs',
    },
    { NODE_ENV: process.env.NODE_ENV },
    options.timeoutMs ?? 20_000,
  );
}

/** Reads a file next to the caller. */
export function readText(url: URL): string {
  return readFileSync(url, 'utf8');
}
