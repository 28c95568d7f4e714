/**
 * The programs outside npm that the test suite runs, and one check for all of them.
 *
 * `npm test` runs this first: when anything is missing it prints one block naming each missing
 * program with the command that installs it, and exits non-zero before any build or test starts.
 * `.ci/run` asks it which Debian packages to install (`--apt-packages`), so the list lives here
 * alone. Plain Node (no dependencies): it runs before `npm ci` too.
 *
 * Usage:
 *   node scripts/prerequisites.mjs                 check; exit 1 with the block when one is missing
 *   node scripts/prerequisites.mjs --apt-packages  print the Debian packages of the missing ones
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * One program the suite needs: the commands that may be it (the first found that passes `args`
 * wins), what it is for, and how to install it. `args`, when set, are run with the command and
 * must exit 0 (a module the program must load).
 * @typedef {{ program: string, commands: string[], args?: string[], usedFor: string, apt: string, brew: string }} Prerequisite
 */

/** @type {readonly Prerequisite[]} */
export const PREREQUISITES = [
  {
    program: 'redis-server',
    commands: ['redis-server'],
    usedFor: 'every Redis-backed test',
    apt: 'redis-server',
    brew: 'redis',
  },
  {
    program: 'redis-cli',
    commands: ['redis-cli'],
    usedFor: 'starting Redis and Redis Cluster',
    apt: 'redis-tools',
    brew: 'redis',
  },
  {
    program: 'redis-sentinel',
    commands: ['redis-sentinel'],
    usedFor: 'the Sentinel failover test',
    apt: 'redis-sentinel',
    brew: 'redis',
  },
  {
    program: 'promtool',
    commands: ['promtool'],
    usedFor: 'the alert rule tests',
    apt: 'prometheus',
    brew: 'prometheus',
  },
  {
    program: 'prometheus',
    commands: ['prometheus'],
    usedFor: 'the scrape test',
    apt: 'prometheus',
    brew: 'prometheus',
  },
  {
    program: 'python3 with grpcio',
    // SLUICE_PYTHON first; then python3 on PATH; then Debian's own, which python3-grpcio installs
    // into even where another python3 (pyenv, a virtualenv) comes first on PATH.
    commands: ['$SLUICE_PYTHON', 'python3', '/usr/bin/python3'],
    args: ['-c', 'import grpc'],
    usedFor: "the service's tests from a non-Node gRPC client",
    apt: 'python3-grpcio',
    brew: 'python && python3 -m pip install grpcio',
  },
];

/**
 * Whether `command` can be run: a path is checked as it is, a bare name is looked up in `pathValue`
 * (the PATH to search).
 * @param {string} command
 * @param {string} pathValue
 */
function findExecutable(command, pathValue) {
  const candidates = command.includes('/')
    ? [command]
    : pathValue
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here: the next directory
    }
  }
  return undefined;
}

/**
 * The path of the first of `prerequisite.commands` found on `env.PATH` that passes its `args`,
 * or `undefined`. `$NAME` stands for the variable's value (skipped when unset).
 * @param {Prerequisite} prerequisite
 * @param {NodeJS.ProcessEnv} [env]
 */
export function locate(prerequisite, env = process.env) {
  for (const command of prerequisite.commands) {
    const name = command.startsWith('$') ? env[command.slice(1)] : command;
    if (name === undefined || name === '') continue;
    const executable = findExecutable(name, env.PATH ?? '');
    if (executable === undefined) continue;
    if (prerequisite.args === undefined) return executable;
    if (spawnSync(executable, prerequisite.args, { stdio: 'ignore', env, timeout: 10_000 }).status === 0)
      return executable;
  }
  return undefined;
}

/**
 * The Python that runs the service's gRPC client tests (one with grpcio), or `undefined`.
 * @param {NodeJS.ProcessEnv} [env]
 */
export function grpcPython(env = process.env) {
  return locate(PREREQUISITES[PREREQUISITES.length - 1], env);
}

/**
 * The prerequisites missing with this environment's PATH (a program not found, or one whose
 * `args` do not exit 0).
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {Prerequisite[]}
 */
export function missingPrerequisites(env = process.env) {
  return PREREQUISITES.filter((prerequisite) => locate(prerequisite, env) === undefined);
}

/** The Debian packages that install `missing`, each once, in order. */
export function aptPackages(missing) {
  return [...new Set(missing.map((prerequisite) => prerequisite.apt))];
}

/**
 * The block `npm test` prints: each missing program, what needs it, and the install commands.
 * @param {readonly Prerequisite[]} missing
 */
export function formatMissing(missing) {
  const width = Math.max(...missing.map((prerequisite) => prerequisite.program.length));
  const brew = [...new Set(missing.map((prerequisite) => prerequisite.brew))];
  const plainBrew = brew.filter((formula) => !formula.includes(' '));
  const otherBrew = brew.filter((formula) => formula.includes(' '));
  return [
    'The test suite needs programs that are not on this PATH:',
    ...missing.map((prerequisite) => `  ${prerequisite.program.padEnd(width)}  for ${prerequisite.usedFor}`),
    '',
    'Install them, then run the tests again:',
    `  Debian/Ubuntu: sudo apt-get install ${aptPackages(missing).join(' ')}`,
    ...(plainBrew.length > 0 ? [`  macOS:         brew install ${plainBrew.join(' ')}`] : []),
    ...otherBrew.map((formula) => `  macOS:         brew install ${formula}`),
    '',
  ].join('\n');
}

function main(argv) {
  const missing = missingPrerequisites();
  if (argv.includes('--apt-packages')) {
    process.stdout.write(aptPackages(missing).join(' ') + (missing.length > 0 ? '\n' : ''));
    return 0;
  }
  if (missing.length === 0) return 0;
  process.stderr.write(formatMissing(missing));
  return 1;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = main(process.argv.slice(2));
}
