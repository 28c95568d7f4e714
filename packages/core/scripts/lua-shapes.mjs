/**
 * The shapes of the decide script: which lua/ files and which features each generated decide
 * script is built from. A shape is a set of algorithms (every one: 'all', or one alone) times a
 * set of decide features (DECIDE_FEATURES: shadow, bans, slots, waits, leases, records): 'full'
 * carries every feature, 'plain' none; a feature an algorithm declares (the module's
 * `lua.features`: a concurrency entry's slots) is carried exactly by the shapes holding that
 * algorithm, full or plain. A chunk's top level runs on every call, so a plain token
 * bucket runs a plain token bucket: no other algorithm's code and none of the features' parsing,
 * closures and tables.
 *
 * The lua/ files mark a feature's code with lines of their own:
 *
 *   -- #if bans            kept when the shape has the feature (`-- #if not bans`: when it has not)
 *   -- #else               the other branch
 *   -- #end
 *
 * (nestable; the marker lines never reach a script). After the cut, a top-level `local function`
 * that nothing left in the chunk names is dropped as well (`dropUnused`), so a helper only a
 * feature calls goes with it. Every shape is built from the same lua/ files, so an edit there
 * reaches every shape. Read by embed-lua.mjs (which writes the scripts) and by
 * scripts/mutate-lua.mjs (which names the shapes each mutant reaches).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

/** The algorithm registry's exports (`ALGORITHM_LIST`, `LUA_COMMON_RESULT_FIELDS`, ...), bundled in memory. */
export async function importRegistry(registryFile) {
  const bundle = await build({
    entryPoints: [registryFile],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
  });
  const code = bundle.outputFiles[0].text;
  return import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`);
}

/**
 * The decide features a shape may leave out, in bit order (`FEATURE_BITS` in the generated
 * scripts.ts; `ScriptCall` sets a bit for each one a call uses).
 */
export const DECIDE_FEATURES = Object.freeze(['shadow', 'bans', 'slots', 'waits', 'leases', 'records']);

/** The feature sets a shape is built with: every feature, or none (bar what its algorithms need). */
const FEATURE_SETS = [
  { suffix: '', features: DECIDE_FEATURES },
  { suffix: '/plain', features: [] },
];

/**
 * The decide script's shapes: `{ name, algorithm, modules, features }`, the full script first
 * (`name` 'all', every module of the registry in its order, every feature), then 'all/plain', then
 * per algorithm its own and its plain one (`<name>`, `<name>/plain`). `algorithm` is null for the
 * shapes of every algorithm.
 */
export function decideShapes(algorithmList) {
  const sets = [{ name: 'all', algorithm: null, modules: [...algorithmList] }].concat(
    algorithmList.map((module) => ({ name: module.name, algorithm: module.name, modules: [module] })),
  );
  // A feature an algorithm declares (a concurrency entry's slots) only its entries use: a shape
  // carries it exactly when one of its algorithms declares it.
  const declared = new Set(algorithmList.flatMap((m) => m.lua.features ?? []));
  return sets.flatMap((set) =>
    FEATURE_SETS.map(({ suffix, features }) => ({
      name: `${set.name}${suffix}`,
      algorithm: set.algorithm,
      modules: set.modules,
      features: DECIDE_FEATURES.filter((feature) =>
        declared.has(feature)
          ? set.modules.some((m) => m.lua.features?.includes(feature))
          : features.includes(feature),
      ),
    })),
  );
}

/** The parts of a shape's decide script in order; `null` is the part generated from the registry. */
export function decidePartsOf(shape) {
  return ['common.lua', ...shape.modules.map((m) => m.lua.file), null, 'decide.lua'];
}

/** A Lua file of `luaDir` with LF line endings and a final newline. */
export function readLua(luaDir, part) {
  const text = readFileSync(join(luaDir, part), 'utf8').replace(/\r\n/g, '\n');
  return text.endsWith('\n') ? text : `${text}\n`;
}

const MARK = /^\s*-- #(if not|if|else|end)\b\s*([A-Za-z_-]*)\s*$/;

/**
 * `text` with the feature sections (see above) cut for a script with `features`; throws naming
 * `file` on an unknown feature or unbalanced markers.
 */
export function cutFeatures(text, features, file) {
  const out = [];
  /** Per open section: whether its current branch is kept, and whether the enclosing one is. */
  const stack = [];
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n];
    const mark = MARK.exec(line);
    const kept = stack.length === 0 || stack[stack.length - 1].kept;
    if (mark === null) {
      if (kept) out.push(line);
      continue;
    }
    const [, op, feature] = mark;
    const where = `lua/${file}:${n + 1}`;
    if (op === 'if' || op === 'if not') {
      if (!DECIDE_FEATURES.includes(feature))
        throw new Error(`lua-shapes: ${where}: unknown feature "${feature}"`);
      const has = features.includes(feature);
      stack.push({ outer: kept, kept: kept && (op === 'if' ? has : !has), branch: 'if' });
    } else if (op === 'else') {
      const top = stack[stack.length - 1];
      if (top === undefined || top.branch !== 'if')
        throw new Error(`lua-shapes: ${where}: #else without #if`);
      top.kept = top.outer && !top.kept;
      top.branch = 'else';
    } else if (stack.pop() === undefined) {
      throw new Error(`lua-shapes: ${where}: #end without #if`);
    }
  }
  if (stack.length > 0) throw new Error(`lua-shapes: lua/${file}: #if without #end`);
  return out.join('\n');
}

/** A chunk's text without its comments and the text of its strings (what `dropUnused` searches for a name). */
const withoutComments = (text) =>
  text
    .replace(/--\[\[[\s\S]*?\]\]/g, '')
    .replace(/--[^\n]*/g, '')
    .replace(/'(?:[^'\\\n]|\\.)*'/g, "''")
    .replace(/"(?:[^"\\\n]|\\.)*"/g, '""');

/** How many times the identifier `name` occurs in `code`. */
const mentions = (code, name) => code.match(new RegExp(`(?<![A-Za-z0-9_.])${name}\\b`, 'g'))?.length ?? 0;

/** A top-level `local a, b = x, y` whose values are plain (names, numbers, strings without commas). */
const PLAIN_LOCALS =
  /^local ([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*) = ((?:[\w.]+|'[^',]*')(?:, (?:[\w.]+|'[^',]*'))*)$/;

/**
 * `chunk` without what nothing else in it mentions, repeated until nothing is left to drop: the
 * top-level `local function <name>(` ... `end` blocks (at column 0, with the comment lines right
 * above them) and the names of top-level `local a, b = x, y` lines of plain values. A closure, a
 * global read, a table costs every call of the script (the top level runs each time) whether or
 * not anything calls it.
 */
export function dropUnused(chunk) {
  let lines = chunk.split('\n');
  for (;;) {
    const code = withoutComments(lines.join('\n'));
    let cut = null;
    for (let n = 0; n < lines.length && cut === null; n++) {
      const line = lines[n];
      const head = /^local function ([A-Za-z_][A-Za-z0-9_]*)\(/.exec(line);
      if (head !== null) {
        let last = n;
        while (last < lines.length && lines[last] !== 'end') last++;
        const block = withoutComments(lines.slice(n, last + 1).join('\n'));
        if (mentions(code, head[1]) === mentions(block, head[1])) {
          let first = n;
          while (first > 0 && lines[first - 1].startsWith('--') && !lines[first - 1].startsWith('-- ===='))
            first--;
          cut = { at: first, count: last - first + 1, with: [] };
        }
        continue;
      }
      const plain = PLAIN_LOCALS.exec(line);
      if (plain === null) continue;
      const names = plain[1].split(', ');
      const values = plain[2].split(', ');
      if (names.length !== values.length) continue;
      const rest = code.replace(line, '');
      const kept = names.map((name, i) => [name, values[i]]).filter(([name]) => mentions(rest, name) > 0);
      if (kept.length === names.length) continue;
      const replacement =
        kept.length === 0
          ? []
          : [`local ${kept.map(([name]) => name).join(', ')} = ${kept.map(([, v]) => v).join(', ')}`];
      cut = { at: n, count: 1, with: replacement };
    }
    if (cut === null) return lines.join('\n');
    lines = [...lines.slice(0, cut.at), ...cut.with, ...lines.slice(cut.at + cut.count)];
  }
}

/** The names a chunk declares at its top level (`local function f`, `local a, b = ...`). */
function topLevelLocals(chunk) {
  const names = new Set();
  for (const line of chunk.split('\n')) {
    const fn = /^local function ([A-Za-z_]\w*)/.exec(line);
    if (fn !== null) names.add(fn[1]);
    const vars = /^local ([A-Za-z_]\w*(?:, *[A-Za-z_]\w*)*)\s*=/.exec(line);
    if (vars !== null) for (const name of vars[1].split(/, */)) names.add(name);
  }
  return names;
}

/**
 * Throws when `chunk` (a shape) names a top-level local of `full` (the full script) that it does
 * not declare: a feature section cut its declaration but not every use, and Redis would stop the
 * script there (a read of an undeclared global) only when a call reaches it.
 */
export function assertDeclared(chunk, full, shapeName) {
  const own = topLevelLocals(chunk);
  const code = withoutComments(chunk);
  for (const name of topLevelLocals(full)) {
    if (!own.has(name) && mentions(code, name) > 0) {
      throw new Error(
        `lua-shapes: decide shape ${shapeName} uses ${name}, whose declaration its feature sections cut`,
      );
    }
  }
}
