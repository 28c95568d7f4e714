/**
 * The main entry stays small: at most 40 runtime names and 90 names in all (runtime and types),
 * counted from the entry as the compiler sees it, so the test fails when a 41st runtime name or a
 * 91st name is added. Whatever only an adapter needs goes to `@sluice/core/adapter` (adapter.ts),
 * which holds no name of the main entry: each name has one home. One meaning per name: no two
 * modules of core export a declaration of the same name.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as adapterEntry from './adapter.js';
import * as mainEntry from './index.js';

const MAX_RUNTIME_NAMES = 40;
const MAX_NAMES = 90;

const entryFile = (name: string): string => fileURLToPath(new URL(name, import.meta.url));

/** Every name an entry exports, runtime (a value, a class, a function) or type only. */
function exportedNames(file: string): { runtime: string[]; types: string[] } {
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const moduleSymbol = source && checker.getSymbolAtLocation(source);
  if (moduleSymbol === undefined) throw new Error(`no module symbol for ${file}`);
  const runtime: string[] = [];
  const types: string[] = [];
  for (const exported of checker.getExportsOfModule(moduleSymbol)) {
    const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const typeOnly = exported.declarations?.some((d) => ts.isExportSpecifier(d) && d.isTypeOnly) === true;
    if (!typeOnly && (target.flags & ts.SymbolFlags.Value) !== 0) runtime.push(exported.name);
    else types.push(exported.name);
  }
  return { runtime: runtime.sort(), types: types.sort() };
}

/** Module -> the names it declares and exports itself (re-exports aside), over core's non-test source. */
function declaredExports(): Map<string, string[]> {
  const src = dirname(entryFile('./index.ts'));
  const byName = new Map<string, string[]>();
  const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter(
    (file) => file.endsWith('.ts') && !/\.(test|test-support|test-util)\.ts$/.test(file),
  );
  for (const file of files) {
    const text = readFileSync(join(src, file), 'utf8');
    for (const match of text.matchAll(
      /^export (?:declare )?(?:abstract )?(?:interface|type|class|enum|function|const|let) ([A-Za-z0-9_$]+)/gm,
    )) {
      const name = match[1] as string;
      byName.set(name, [...(byName.get(name) ?? []), file]);
    }
  }
  return byName;
}

const main = exportedNames(entryFile('./index.ts'));
const adapter = exportedNames(entryFile('./adapter.ts'));

describe('the public API', () => {
  it(`@sluice/core exports at most ${MAX_RUNTIME_NAMES} runtime names and ${MAX_NAMES} names in all`, () => {
    expect(main.runtime.length, main.runtime.join(', ')).toBeLessThanOrEqual(MAX_RUNTIME_NAMES);
    expect(main.runtime.length + main.types.length).toBeLessThanOrEqual(MAX_NAMES);
  });

  it('counts what the module really exports at run time', () => {
    expect(Object.keys(mainEntry).sort()).toEqual(main.runtime);
    expect(Object.keys(adapterEntry).sort()).toEqual(adapter.runtime);
  });

  it('@sluice/core/adapter repeats no name of the main entry', () => {
    const inMain = new Set([...main.runtime, ...main.types]);
    expect([...adapter.runtime, ...adapter.types].filter((name) => inMain.has(name))).toEqual([]);
  });

  it('one meaning per name: no two modules of core declare and export the same name', () => {
    const declared = declaredExports();
    expect(declared.get('DecisionSource')).toEqual(['model/decision.ts']);
    const twice = [...declared]
      .filter(([, files]) => files.length > 1)
      .map(([name, files]) => `${name}: ${files}`);
    expect(twice).toEqual([]);
  });

  it('the application essentials are on the main entry', () => {
    for (const name of ['createLimiter', 'definePolicy', 'MemoryStore', 'RedisStore', 'isPolicyError']) {
      expect(main.runtime).toContain(name);
    }
    for (const name of ['PolicyInput', 'Decision', 'Store', 'Limiter', 'DecisionSource']) {
      expect(main.types).toContain(name);
    }
  });
});
