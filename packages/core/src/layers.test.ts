/**
 * The layers of core, read from the source imports (type-only imports included, test files left
 * out): no import cycle; `limiter/`, `options/`, `stores/`, `redis/`, `algorithms/`, `policy/` and
 * `keys/` reach no `http/` file, directly or through any other file; `options/` imports only the
 * layers below it; core imports no web framework; `node:` modules only under `node/`; the adapters
 * never import each other and reach core through its entries only; no source file over 500 lines.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));
const PACKAGES = resolve(SRC, '../..');

/** Folders below `http/` in the layering: no import path from them reaches it. */
const BELOW_HTTP = ['limiter/', 'options/', 'stores/', 'redis/', 'algorithms/', 'policy/', 'keys/'];
/**
 * What `options/` (the option schema, its checks, defaults and errors) may import: itself, the
 * layers it compiles options into, the `Limiter` interface (the type of the `limiter` option)
 * and the shared types, brands and logger check at the top of src/.
 */
const OPTIONS_MAY_IMPORT = [
  'options/',
  'model/',
  'policy/',
  'keys/',
  'algorithms/',
  'limiter/limiter.ts',
  'types.ts',
  'warn.ts',
  'error-brands.ts',
];
/** A module holds one step whole: a cohesive one may run to 500 lines rather than be split at 300. */
const MAX_LINES = 500;
const WEB_FRAMEWORKS =
  /^(express|koa|hono|fastify|fastify-plugin|@nestjs\/.*|@koa\/.*|@hono\/.*|@fastify\/.*)$/;
const ADAPTERS = ['express', 'koa', 'hono', 'nestjs', 'fastify', 'server'];
const CORE_ENTRIES = new Set(['@sluice/core', '@sluice/core/adapter', '@sluice/core/node']);
const NODE_BUILTINS = new Set(builtinModules);

const isTest = (file: string): boolean => /\.(test|test-support|test-util)\.ts$/.test(file);

/** Every non-test .ts file below `dir`, as paths relative to `dir` with `/` separators. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((file) => file.split('\\').join('/'))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !isTest(file))
    .sort();
}

/** The module specifiers a file imports or re-exports, type-only and dynamic ones included. */
function importsOf(path: string): string[] {
  return ts.preProcessFile(readFileSync(path, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

const coreFiles = sourceFiles(SRC);
const coreFileSet = new Set(coreFiles);
/** Lines of a text, as `wc -l` counts them. */
const lineCount = (text: string): number => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
const lines = new Map(coreFiles.map((file) => [file, lineCount(readFileSync(join(SRC, file), 'utf8'))]));
/** Core's import graph: file -> the core files it imports (relative paths from src/). */
const graph = new Map<string, string[]>();
/** Core's imports of packages: file -> bare specifiers. */
const packageImports = new Map<string, string[]>();
for (const file of coreFiles) {
  const specifiers = importsOf(join(SRC, file));
  const local = specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) =>
      relative(SRC, resolve(SRC, dirname(file), s))
        .split('\\')
        .join('/')
        .replace(/\.js$/, '.ts'),
    );
  graph.set(
    file,
    local.filter((target) => coreFileSet.has(target)),
  );
  packageImports.set(
    file,
    specifiers.filter((s) => !s.startsWith('.')),
  );
}

/**
 * The import paths from each file of `from` to a file of `to` (one shortest path per file of
 * `from` that reaches `to`), as `a -> b -> c`.
 */
function pathsInto(
  edges: ReadonlyMap<string, readonly string[]>,
  from: (file: string) => boolean,
  to: (file: string) => boolean,
): string[] {
  const found: string[] = [];
  for (const start of [...edges.keys()].filter(from)) {
    const parent = new Map<string, string | undefined>([[start, undefined]]);
    const queue = [start];
    let hit: string | undefined;
    while (queue.length > 0 && hit === undefined) {
      const file = queue.shift() as string;
      for (const target of edges.get(file) ?? []) {
        if (parent.has(target)) continue;
        parent.set(target, file);
        if (to(target)) {
          hit = target;
          break;
        }
        queue.push(target);
      }
    }
    if (hit === undefined) continue;
    const path = [hit];
    for (let at = parent.get(hit); at !== undefined; at = parent.get(at)) path.unshift(at);
    found.push(path.join(' -> '));
  }
  return found;
}

/** The strongly connected components of more than one file (or a file importing itself): the cycles. */
function cycles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const target of edges.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) as number, index.get(target) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (edges.get(file) ?? []).includes(file)) found.push(component.sort());
  };
  for (const file of edges.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe('the layers of @sluice/core', () => {
  it('the cycle finder finds a cycle, a self-import and nothing in a chain', () => {
    const found = cycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
        ['d', ['d']],
        ['e', ['a']],
      ]),
    );
    expect(found).toEqual([['a', 'b', 'c'], ['d']]);
    expect(
      cycles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
  });

  it('the path finder finds the shortest way into a layer, and nothing when there is none', () => {
    const edges = new Map([
      ['a/1', ['a/2', 'b/1']],
      ['a/2', ['c/1']],
      ['b/1', ['b/2']],
      ['b/2', ['c/2']],
      ['d/1', ['b/1']],
    ]);
    const inC = (file: string) => file.startsWith('c/');
    expect(pathsInto(edges, (file) => file.startsWith('a/'), inC)).toEqual([
      'a/1 -> a/2 -> c/1',
      'a/2 -> c/1',
    ]);
    expect(pathsInto(edges, (file) => file.startsWith('d/'), inC)).toEqual(['d/1 -> b/1 -> b/2 -> c/2']);
    expect(
      pathsInto(
        edges,
        (file) => file.startsWith('c/'),
        (file) => file.startsWith('a/'),
      ),
    ).toEqual([]);
  });

  it('reads the whole source', () => {
    expect(coreFiles).toContain('index.ts');
    expect(coreFiles).toContain('limiter/create-limiter.ts');
    expect([...graph.values()].flat().length).toBeGreaterThan(coreFiles.length);
  });

  it('has no import cycle', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it(`${BELOW_HTTP.join(', ')} reach no http/ file, directly or through another`, () => {
    const upward = pathsInto(
      graph,
      (file) => BELOW_HTTP.some((dir) => file.startsWith(dir)),
      (file) => file.startsWith('http/'),
    );
    expect(upward).toEqual([]);
  });

  it('options/ imports only the layers below it', () => {
    const wrong = [...graph].flatMap(([file, targets]) =>
      file.startsWith('options/')
        ? targets
            .filter(
              (t) =>
                !OPTIONS_MAY_IMPORT.some(
                  (allowed) => t === allowed || (allowed.endsWith('/') && t.startsWith(allowed)),
                ),
            )
            .map((t) => `${file} -> ${t}`)
        : [],
    );
    expect(wrong).toEqual([]);
  });

  it('imports no web framework, and node: modules only under node/', () => {
    const wrong = [...packageImports].flatMap(([file, specifiers]) =>
      specifiers
        .filter(
          (s) =>
            WEB_FRAMEWORKS.test(s) ||
            ((s.startsWith('node:') || NODE_BUILTINS.has(s)) && !file.startsWith('node/')),
        )
        .map((s) => `${file} -> ${s}`),
    );
    expect(wrong).toEqual([]);
  });

  it(`no source file over ${MAX_LINES} lines`, () => {
    const over = [...lines]
      .filter(([, count]) => count > MAX_LINES)
      .map(([file, count]) => `${file} (${count})`);
    expect(over).toEqual([]);
  });

  it('adapters never import each other, and reach core through its entries only', () => {
    const wrong = ADAPTERS.flatMap((adapter) => {
      const src = join(PACKAGES, adapter, 'src');
      return sourceFiles(src).flatMap((file) =>
        importsOf(join(src, file))
          .filter(
            (s) =>
              (s.startsWith('@sluice/') && !CORE_ENTRIES.has(s)) ||
              (s.startsWith('.') && !resolve(src, dirname(file), s).startsWith(src)),
          )
          .map((s) => `${adapter}/src/${file} -> ${s}`),
      );
    });
    expect(wrong).toEqual([]);
  });
});
