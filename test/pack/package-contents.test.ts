/**
 * What each tarball holds, as `npm publish` would upload it: the build, the README and the
 * LICENSE and nothing else; every entry point the manifest names; the metadata a team needs
 * to audit it (license, engines, repository, homepage, bugs); README links that resolve
 * inside the package or are absolute (and, for this repository's own URLs, name a file that
 * exists). Then the dual-package check: errors from the ES module copy and from the CommonJS
 * copy of the packed core are recognized by each other's `is...Error` functions, and the packed
 * Fastify plugin runs from an ES module and from a CommonJS file.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/apps.js';
import { type PackedPackage, type PackedProject, packAll } from './packed.js';

const run = promisify(execFile);

const REPOSITORY = 'https://github.com/sluice-rl/sluice';
const LICENSE_TEXT = readFileSync(join(REPO_ROOT, 'LICENSE'), 'utf8');
const NODE_RANGE = '>=20.19';

let project: PackedProject;

beforeAll(async () => {
  project = await packAll();
}, 120_000);

afterAll(async () => {
  await project?.remove();
});

/** Every file path a manifest points at: main, module, types, exports and typesVersions targets. */
function entryPoints(pkg: PackedPackage): string[] {
  const { manifest } = pkg;
  const paths: string[] = [];
  const visit = (value: unknown): void => {
    if (typeof value === 'string') paths.push(value);
    else if (Array.isArray(value)) value.forEach(visit);
    else if (typeof value === 'object' && value !== null) Object.values(value).forEach(visit);
  };
  visit([manifest.main, manifest.module, manifest.types, manifest.exports, manifest.typesVersions]);
  return paths.filter((path) => path !== undefined).map((path) => posix.normalize(path));
}

/** The links of a markdown text: inline `[text](target)` and reference `[label]: target`. */
function markdownLinks(markdown: string): string[] {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const inline = [...withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const reference = [...withoutCode.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map(
    (m) => m[1]!,
  );
  return [...inline, ...reference];
}

describe.each(['core', 'express', 'fastify', 'hono', 'koa', 'nestjs'])('@sluice/%s as packed', (dir) => {
  const pkg = (): PackedPackage => {
    const found = project.packages.find((p) => p.name === `@sluice/${dir}`);
    if (found === undefined) throw new Error(`@sluice/${dir} was not packed`);
    return found;
  };

  it('holds the build, README.md, LICENSE and package.json, nothing else', () => {
    const { files } = pkg();
    expect(files).toContain('package.json');
    expect(files).toContain('README.md');
    expect(files).toContain('LICENSE');
    for (const entry of ['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts']) {
      expect(files).toContain(entry);
    }
    const outside = files.filter((file) => !file.startsWith('dist/'));
    expect(outside.sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
    expect(files.filter((file) => /\.test\.|\.ts$/.test(file) && !file.endsWith('.d.ts'))).toEqual([]);
  });

  it('ships every file its manifest points at', () => {
    const { files } = pkg();
    const entries = entryPoints(pkg());
    expect(entries.length).toBeGreaterThan(4);
    for (const entry of entries) expect(files, entry).toContain(entry);
  });

  it('carries the MIT LICENSE of the repository', () => {
    expect(LICENSE_TEXT).toMatch(/^MIT License\n\nCopyright \(c\) 2026 The Sluice authors\n/);
    expect(readFileSync(join(pkg().installedDir, 'LICENSE'), 'utf8')).toBe(LICENSE_TEXT);
    expect(pkg().manifest.license).toBe('MIT');
  });

  it('names engines, repository, homepage and bugs', () => {
    const { manifest } = pkg();
    expect(manifest.engines).toEqual({ node: NODE_RANGE });
    expect(manifest.repository).toEqual({
      type: 'git',
      url: `git+${REPOSITORY}.git`,
      directory: `packages/${dir}`,
    });
    expect(manifest.homepage).toBe(`${REPOSITORY}/tree/main/packages/${dir}#readme`);
    expect(manifest.bugs).toEqual({ url: `${REPOSITORY}/issues` });
  });

  it("has README links that resolve inside the package or are absolute (this repository's exist)", () => {
    const { files, installedDir } = pkg();
    const links = markdownLinks(readFileSync(join(installedDir, 'README.md'), 'utf8'));
    for (const link of links) {
      if (link.startsWith('#') || link.startsWith('mailto:')) continue;
      if (/^https?:\/\//.test(link)) {
        const own = new RegExp(`^${REPOSITORY}/(?:blob|tree)/main/([^#?]+)`).exec(link);
        if (own !== null) expect(existsSync(join(REPO_ROOT, own[1]!)), link).toBe(true);
        continue;
      }
      const target = posix.normalize(link.replace(/[#?].*$/, ''));
      expect(target.startsWith('..'), `${link} leaves the package`).toBe(false);
      const inside = files.some(
        (file) => file === target || file.startsWith(`${target.replace(/\/$/, '')}/`),
      );
      expect(inside, `${link} is not in the tarball`).toBe(true);
    }
  });
});

describe('the root package', () => {
  it('declares the same metadata and engines', () => {
    const root = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(root.license).toBe('MIT');
    expect(root.engines).toEqual({ node: NODE_RANGE });
    expect(root.repository).toEqual({ type: 'git', url: `git+${REPOSITORY}.git` });
    expect(root.bugs).toEqual({ url: `${REPOSITORY}/issues` });
  });
});

/** Loads both copies of the packed core in one Node process and crosses their errors over. */
const DUAL_PACKAGE_SCRIPT = `
import { createRequire } from 'node:module';
import * as esmMain from '@sluice/core';
import * as esmAdapter from '@sluice/core/adapter';
const require = createRequire(import.meta.url);
// The guards and PolicyError, CidrError from the main entry; the other error classes from the adapter subpath.
const esm = { ...esmMain, ...esmAdapter };
const cjs = { ...require('@sluice/core'), ...require('@sluice/core/adapter') };
const make = (core) => ({
  PolicyError: new core.PolicyError('limit', -1, 'must be a positive integer', 'api'),
  RateLimitOptionsError: new core.RateLimitOptionsError('limit', -1, 'must be a positive integer'),
  CidrError: new core.CidrError('10.0.0.0/99', 'has a prefix length above 32'),
  StoreTimeoutError: new core.StoreTimeoutError(100),
  RestRedisError: new core.RestRedisError('ERR unknown command', 400),
});
const copies = { esm, cjs };
const errors = { esm: make(esm), cjs: make(cjs) };
const results = [];
for (const [from, made] of Object.entries(errors)) {
  for (const [name, error] of Object.entries(made)) {
    for (const [by, core] of Object.entries(copies)) {
      results.push({
        name, from, by,
        guard: core['is' + name](error),
        instanceOf: error instanceof core[name],
        otherGuards: Object.keys(made).filter((other) => other !== name && core['is' + other](error)),
      });
    }
  }
}
const lookalikes = [new Error('x'), { code: 'INVALID_POLICY', name: 'PolicyError' }, null, 'PolicyError'];
results.push({ lookalikes: lookalikes.map((value) => esm.isPolicyError(value) || cjs.isPolicyError(value)) });
console.log(JSON.stringify({ distinct: esm.PolicyError !== cjs.PolicyError, results }));
`;

describe('dual package: the ES module and the CommonJS copy of @sluice/core in one process', () => {
  it('recognize each other’s errors with is...Error, where instanceof fails across copies', async () => {
    const script = join(project.root, 'dual-package.mjs');
    await writeFile(script, DUAL_PACKAGE_SCRIPT);
    const { stdout } = await run(process.execPath, [script], { cwd: project.root });
    const { distinct, results } = JSON.parse(stdout) as {
      distinct: boolean;
      results: (
        | {
            name: string;
            from: string;
            by: string;
            guard: boolean;
            instanceOf: boolean;
            otherGuards: string[];
          }
        | { lookalikes: boolean[] }
      )[];
    };
    expect(distinct).toBe(true); // two copies, two classes: the hazard is real here
    const crossings = results.filter((r) => 'name' in r);
    expect(crossings).toHaveLength(5 * 2 * 2);
    for (const r of crossings) {
      const label = `${r.name} from the ${r.from} copy, checked by the ${r.by} copy`;
      expect(r.guard, label).toBe(true);
      expect(r.instanceOf, label).toBe(r.from === r.by);
      expect(r.otherGuards, label).toEqual([]);
    }
    expect(results.find((r) => 'lookalikes' in r)).toEqual({ lookalikes: [false, false, false, false] });
  });
});

/** A Fastify app with the packed plugin (1 request per minute), two requests, the statuses printed. */
const fastifyApp = (load: string) => `
${load}
const app = Fastify();
app.register(rateLimit, { limit: 1, window: '1m' });
app.get('/', async (request) => ({ policy: request.rateLimit.policy }));
const first = await app.inject('/');
const second = await app.inject('/');
console.log(JSON.stringify([first.statusCode, first.json(), second.statusCode, second.headers['content-type']]));
await app.close();
`;

describe('@sluice/fastify as packed, in a fresh project', () => {
  it.each([
    {
      kind: 'ES module',
      file: 'fastify-app.mjs',
      load: "import Fastify from 'fastify';\nimport { rateLimit } from '@sluice/fastify';",
    },
    {
      kind: 'CommonJS',
      file: 'fastify-app.cjs',
      load: "const Fastify = require('fastify');\nconst { rateLimit } = require('@sluice/fastify');\n(async () => {",
    },
  ])('registers and limits from a $kind', async ({ file, load }) => {
    const source = file.endsWith('.cjs') ? `${fastifyApp(load)}})();\n` : fastifyApp(load);
    await writeFile(join(project.root, file), source);
    const { stdout } = await run(process.execPath, [file], { cwd: project.root });
    expect(JSON.parse(stdout)).toEqual([
      200,
      { policy: 'default' },
      429,
      'application/problem+json; charset=utf-8',
    ]);
  });
});
