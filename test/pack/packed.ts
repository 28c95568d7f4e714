/**
 * The publishable packages as a user gets them: `npm pack` of every workspace under packages/
 * (what `npm publish` uploads), each tarball unpacked into `node_modules/@sluice/<name>` of a
 * scratch project outside the repository. The packages' third-party dependencies and peers
 * (and their `@types`) are linked in from the repository's node_modules, so nothing is
 * downloaded; the packed packages find each other, never the workspace copies.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../support/apps.js';

const run = promisify(execFile);

/** The fields of a package.json these tests read. */
export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly license?: string;
  readonly engines?: Record<string, string>;
  readonly repository?: { type?: string; url?: string; directory?: string } | string;
  readonly homepage?: string;
  readonly bugs?: { url?: string } | string;
  readonly main?: string;
  readonly module?: string;
  readonly types?: string;
  readonly exports?: Record<string, unknown>;
  readonly typesVersions?: Record<string, Record<string, string[]>>;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
}

/** One packed package. */
export interface PackedPackage {
  /** `@sluice/core`, ... */
  readonly name: string;
  /** The workspace folder it was packed from. */
  readonly sourceDir: string;
  /** The tarball. */
  readonly tarball: string;
  /** Where it is unpacked, inside the scratch project's node_modules. */
  readonly installedDir: string;
  /** Every path in the tarball, relative to the package root, sorted. */
  readonly files: readonly string[];
  /** The package.json as packed. */
  readonly manifest: Manifest;
}

/** The scratch project with every package installed from its tarball. */
export interface PackedProject {
  readonly root: string;
  readonly packages: readonly PackedPackage[];
  /** Removes the scratch project. */
  remove(): Promise<void>;
}

interface NpmPackEntry {
  name: string;
  filename: string;
  files: { path: string }[];
}

/** The workspaces under packages/, by folder name. */
async function packageDirs(): Promise<string[]> {
  const names = await readdir(join(REPO_ROOT, 'packages'));
  return names.filter((name) => existsSync(join(REPO_ROOT, 'packages', name, 'package.json'))).sort();
}

/** Packs every package (built first: `npm run build`) and installs the tarballs in a scratch project. */
export async function packAll(): Promise<PackedProject> {
  const dirs = await packageDirs();
  for (const dir of dirs) {
    if (!existsSync(join(REPO_ROOT, 'packages', dir, 'dist'))) {
      throw new Error(`packages/${dir}/dist is missing: run \`npm run build\` first`);
    }
  }
  const root = await mkdtemp(join(tmpdir(), 'sluice-packed-'));
  const tarballs = join(root, 'tarballs');
  await mkdir(tarballs);
  const { stdout } = await run(
    'npm',
    ['pack', '--json', '--pack-destination', tarballs, ...dirs.flatMap((dir) => ['-w', `packages/${dir}`])],
    { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 },
  );
  const entries = JSON.parse(stdout) as NpmPackEntry[];
  const packages: PackedPackage[] = [];
  const links = new Set<string>(['@types/node']);
  for (const entry of entries) {
    const dir = dirs.find((d) => `@sluice/${d}` === entry.name);
    if (dir === undefined) throw new Error(`npm pack returned an unexpected package ${entry.name}`);
    const installedDir = join(root, 'node_modules', entry.name);
    await mkdir(installedDir, { recursive: true });
    const tarball = join(tarballs, entry.filename);
    await run('tar', ['-xzf', tarball, '-C', installedDir, '--strip-components=1']);
    const manifest = JSON.parse(await readFile(join(installedDir, 'package.json'), 'utf8')) as Manifest;
    for (const dep of [
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]) {
      if (dep.startsWith('@sluice/')) continue;
      links.add(dep);
      const typesName = `@types/${dep.replace(/^@([^/]+)\//, '$1__')}`;
      if (existsSync(join(REPO_ROOT, 'node_modules', typesName))) links.add(typesName);
    }
    packages.push({
      name: entry.name,
      sourceDir: join(REPO_ROOT, 'packages', dir),
      tarball,
      installedDir,
      files: entry.files.map((file) => file.path).sort(),
      manifest,
    });
  }
  for (const name of links) {
    const target = join(REPO_ROOT, 'node_modules', name);
    if (!existsSync(target)) continue; // an optional peer the repository does not install
    const link = join(root, 'node_modules', name);
    await mkdir(join(link, '..'), { recursive: true });
    await symlink(target, link, 'dir');
  }
  packages.sort((a, b) => a.name.localeCompare(b.name));
  return { root, packages, remove: () => rm(root, { recursive: true, force: true }) };
}

/** The import specifiers a package's `exports` offers (`@sluice/core`, `@sluice/core/node`), not package.json. */
export function subpathSpecifiers(pkg: PackedPackage): string[] {
  const exportsField = pkg.manifest.exports ?? { '.': {} };
  return Object.keys(exportsField)
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`));
}
