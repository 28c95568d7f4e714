#!/usr/bin/env node
/**
 * Mutation testing for lua/: applies each mutant of scripts/lua-mutants.mjs alone to a
 * copy of the repository (lua/, packages/core, test/support; node_modules linked), lets
 * the core build embed the scripts (packages/core/scripts/embed-lua.mjs) and runs the
 * core tests that execute the scripts against a real redis-server. A mutant is killed when
 * a test fails; the survivors are listed. The work tree is never touched.
 *
 *   node scripts/mutate-lua.mjs                 every mutant
 *   node scripts/mutate-lua.mjs --only a,b      the mutants with these ids (or id prefixes)
 *   node scripts/mutate-lua.mjs --all-core      run the whole core project per mutant
 *   node scripts/mutate-lua.mjs --tests x,y     only the test files whose path contains x or y
 *   node scripts/mutate-lua.mjs --out f.json    write the report there (default reports/lua-mutation.json)
 *   node scripts/mutate-lua.mjs --list          print the list, run nothing
 *
 * The decide script is built in shapes (packages/core/scripts/lua-shapes.mjs: algorithm x features,
 * the full script and per algorithm a full and a plain one, each from the same lua/ files), and the
 * tests run every shape (a call's script is the one RedisStore picks). Each mutant is listed with
 * the scripts its text is in as built; a script that no mutant reaches fails the run.
 *
 * Writes reports/lua-mutation.json. Exits 1 when a mutant survives that the list does not
 * explain, an entry no longer matches its script (stale), or a script has no mutant.
 */
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decidePartsOf, decideShapes, importRegistry } from '../packages/core/scripts/lua-shapes.mjs';
import { LUA_MUTANTS } from './lua-mutants.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Every script built from lua/, with its files and its generated source: each decide shape
 * (`decide:<shape>`, packages/core/scripts/lua-shapes.mjs: algorithm x features), then the settle,
 * slots and reset scripts. The sources are the build's (packages/core/scripts/embed-lua.mjs, run
 * here first), so a mutant reaches a shape only when its text survived that shape's feature cut.
 */
async function scriptFiles() {
  const embed = spawnSync(process.execPath, ['packages/core/scripts/embed-lua.mjs'], {
    cwd: root,
    encoding: 'utf8',
  });
  if (embed.status !== 0) throw new Error(`mutate-lua: embed-lua failed: ${embed.stderr}`);
  const { ALGORITHM_LIST } = await importRegistry(join(root, 'packages/core/src/algorithms/index.ts'));
  const generated = await importRegistry(join(root, 'packages/core/src/generated/scripts.ts'));
  const sourceOf = new Map(generated.DECIDE_SHAPES.map((shape) => [shape.name, shape.source]));
  const scripts = decideShapes(ALGORITHM_LIST).map((shape) => ({
    name: `decide:${shape.name}`,
    files: decidePartsOf(shape).filter((part) => part !== null),
    source: sourceOf.get(shape.name),
  }));
  const full = scripts[0].files;
  scripts.push(
    { name: 'settle', files: [...full.slice(0, -1), 'settle.lua'], source: generated.SETTLE_SCRIPT_SOURCE },
    { name: 'slots', files: ['common.lua', 'slots.lua'], source: generated.SLOTS_SCRIPT_SOURCE },
    { name: 'reset', files: ['reset.lua'], source: generated.RESET_SCRIPT_SOURCE },
  );
  return scripts;
}
const SCRIPTS = await scriptFiles();
/** `text` without the feature marker lines (`-- #if x`, `-- #else`, `-- #end`), which never reach a script. */
const withoutMarkers = (text) => text.replace(/^[ \t]*-- #(?:if not|if|else|end)\b[^\n]*(?:\n|$)/gm, '');
/**
 * Whether mutant `m` changes `script`: its file is a part and its text is in the script as built
 * (a marker line in `find` only pins the place in the file: the text around it must be there).
 */
const reaches = (script, m) =>
  script.files.includes(m.file) && script.source.includes(withoutMarkers(m.find));
/** The scripts mutant `m` changes. */
const scriptsOf = (m) => SCRIPTS.filter((s) => reaches(s, m)).map((s) => s.name);
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const onlyArg = args.indexOf('--only');
const only = onlyArg >= 0 ? args[onlyArg + 1].split(',') : undefined;
const testsArg = args.indexOf('--tests');
const testsOnly = testsArg >= 0 ? args[testsArg + 1].split(',') : undefined;
const outArg = args.indexOf('--out');
const out = outArg >= 0 ? args[outArg + 1] : 'reports/lua-mutation.json';
/** Ms one test run may take before the mutant counts as killed by a timeout. */
const RUN_TIMEOUT_MS = 600_000;
/** Ms one test or hook may take (vitest's own default, 5 s, is too short on a loaded machine). */
const TEST_TIMEOUT_MS = 120_000;

const mutants = LUA_MUTANTS.filter((m) => only === undefined || only.some((p) => m.id.startsWith(p)));
/** Mutants per script, over the whole list: a script none reaches is a gap. */
const perScript = Object.fromEntries(
  SCRIPTS.map((script) => [script.name, LUA_MUTANTS.filter((m) => reaches(script, m)).length]),
);
const unreached = Object.keys(perScript).filter((name) => perScript[name] === 0);
if (flag('--list')) {
  for (const m of mutants)
    console.log(
      `${m.id}\tlua/${m.file}\t[${scriptsOf(m).join(' ')}]\t${m.find.trim()}  ->  ${m.replace.trim()}`,
    );
  console.log(
    `\nscripts: ${Object.entries(perScript)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ')}${unreached.length ? `; no mutant reaches ${unreached.join(', ')}` : ''}`,
  );
  process.exit(unreached.length > 0 ? 1 : 0);
}

/** How many times `needle` occurs in `text`. */
function occurrences(text, needle) {
  let n = 0;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) n += 1;
  return n;
}

// The copy: only what the core tests read; node_modules are links to the real ones.
const work = mkdtempSync(join(tmpdir(), 'sluice-mutate-lua-'));
const skip = new Set(['node_modules', 'dist', '.turbo', 'coverage', 'test-results.json']);
const copy = (rel) =>
  cpSync(join(root, rel), join(work, rel), {
    recursive: true,
    filter: (src) => !skip.has(src.split('/').pop()),
  });
for (const rel of [
  'package.json',
  'tsconfig.base.json',
  'lua',
  'packages/core',
  'test/support',
  'test/cluster/key-slot.ts',
])
  copy(rel);
symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'));
const coreModules = join(root, 'packages/core/node_modules');
try {
  readdirSync(coreModules);
  symlinkSync(coreModules, join(work, 'packages/core/node_modules'));
} catch {
  // no package-local modules: all hoisted
}
const coreDir = join(work, 'packages/core');
const cleanUp = () => rmSync(work, { recursive: true, force: true });
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    cleanUp();
    process.exit(130);
  });
}
const luaDir = join(work, 'lua');

// The tests that run the scripts: core test files that start a redis-server (themselves or through
// the fixture).
const testFiles = flag('--all-core')
  ? []
  : findTests(join(coreDir, 'src'))
      .filter((f) => /redis-server|redis-fixture/.test(readFileSync(f, 'utf8')))
      // Which source files a check runs through: it bundles the package from the repository's
      // own tree, not this copy, and asserts nothing of the scripts.
      .filter((f) => !f.endsWith('/check-path.test.ts'))
      .filter((f) => testsOnly === undefined || testsOnly.some((t) => f.includes(t)));

function findTests(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return findTests(path);
    return e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Embeds the scripts and runs the tests; the names of the failed tests ([] = all passed). */
function runTests() {
  const embed = spawnSync(process.execPath, ['scripts/embed-lua.mjs'], { cwd: coreDir, encoding: 'utf8' });
  if (embed.status !== 0) return { failed: [`build: ${embed.stderr.trim().split('\n')[0]}`] };
  const report = join(work, 'vitest-report.json');
  rmSync(report, { force: true });
  const vitest = join(root, 'node_modules/vitest/vitest.mjs');
  const run = spawnSync(
    process.execPath,
    [
      vitest,
      'run',
      '--config',
      'vitest.config.ts',
      '--bail',
      '1',
      // A loaded machine must not pass for a killed mutant: only a wrong answer kills.
      '--testTimeout',
      String(TEST_TIMEOUT_MS),
      '--hookTimeout',
      String(TEST_TIMEOUT_MS),
      '--reporter',
      'json',
      '--outputFile',
      report,
      ...testFiles,
    ],
    { cwd: coreDir, encoding: 'utf8', timeout: RUN_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
  );
  if (run.error?.code === 'ETIMEDOUT' || run.signal)
    return { failed: [`timeout after ${RUN_TIMEOUT_MS} ms`] };
  let failed = [];
  try {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    failed = json.testResults.flatMap((file) =>
      file.assertionResults
        .filter((t) => t.status === 'failed')
        .map(
          (t) =>
            `${t.fullName}: ${String(t.failureMessages?.[0] ?? '')
              .split('\n')[0]
              .slice(0, 200)}`,
        ),
    );
    // With --bail, the tests still running in other files when one fails are cancelled and
    // reported failed without an assertion (STACK_TRACE_ERROR): name a real failure first.
    failed.sort((a, b) => Number(a.includes('STACK_TRACE_ERROR')) - Number(b.includes('STACK_TRACE_ERROR')));
    if (failed.length === 0 && json.numFailedTestSuites > 0) {
      const broken = json.testResults.find((file) => file.status === 'failed');
      const why = String(broken?.message ?? '')
        .split('\n')[0]
        .slice(0, 300);
      failed = [`a test file failed to load: ${broken?.name.slice(coreDir.length + 1)}: ${why}`];
    }
  } catch {
    failed = run.status === 0 ? [] : [`vitest exited ${run.status}`];
  }
  if (failed.length === 0 && run.status !== 0) failed = [`vitest exited ${run.status}`];
  return { failed };
}

const started = Date.now();
console.log(
  `mutate-lua: ${mutants.length} mutants, tests: ${testFiles.length ? testFiles.map((f) => f.slice(coreDir.length + 1)).join(' ') : 'core project'}`,
);
const baseline = runTests();
if (baseline.failed.length > 0) {
  console.error(`mutate-lua: the tests fail without any mutant: ${baseline.failed.join('; ')}`);
  cleanUp();
  process.exit(2);
}

const results = [];
for (const m of mutants) {
  const path = join(luaDir, m.file);
  const original = readFileSync(path, 'utf8');
  const n = occurrences(original, m.find);
  let status;
  let detail = '';
  if (n !== 1) {
    status = 'stale';
    detail = n === 0 ? 'text not found' : `text found ${n} times`;
  } else {
    writeFileSync(
      path,
      original.replace(m.find, () => m.replace),
    );
    try {
      const { failed } = runTests();
      status = failed.length > 0 ? 'killed' : m.explained ? 'explained' : 'survived';
      detail = failed.length > 0 ? failed[0] : (m.explained ?? '');
    } finally {
      writeFileSync(path, original);
    }
  }
  results.push({
    id: m.id,
    file: `lua/${m.file}`,
    scripts: scriptsOf(m),
    find: m.find,
    replace: m.replace,
    status,
    detail,
  });
  console.log(`${status.padEnd(9)} ${m.id}${detail ? `  (${detail})` : ''}`);
}
cleanUp();

const count = (s) => results.filter((r) => r.status === s).length;
const killed = count('killed');
const scored = results.filter((r) => r.status !== 'stale').length;
const summary = {
  date: new Date().toISOString(),
  seconds: Math.round((Date.now() - started) / 1000),
  mutants: results.length,
  killed,
  explained: count('explained'),
  survived: count('survived'),
  stale: count('stale'),
  scripts: perScript,
  unreached,
  score: scored ? Math.round((1000 * killed) / scored) / 10 : 0,
};
const outPath = resolve(root, out);
mkdirSync(dirname(outPath), { recursive: true });
writeFileSync(outPath, `${JSON.stringify({ summary, results }, null, 2)}\n`);
console.log(
  `\nmutate-lua: ${summary.killed} killed, ${summary.explained} explained, ${summary.survived} survived, ${summary.stale} stale of ${summary.mutants} (score ${summary.score}%, ${summary.seconds} s)`,
);
for (const r of results.filter((x) => x.status === 'survived' || x.status === 'stale')) {
  console.log(`  ${r.status}: ${r.id} in ${r.file}: ${r.find.trim()} -> ${r.replace.trim()}`);
}
if (unreached.length > 0) console.log(`  no mutant reaches: ${unreached.join(', ')}`);
process.exit(summary.survived + summary.stale + unreached.length > 0 ? 1 : 0);
