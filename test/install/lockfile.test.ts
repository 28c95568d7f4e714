/**
 * `npm ci` on the oldest Node the repository supports prints no warning, checked on the
 * lockfile (what `npm ci` installs) without installing: every locked package's `engines.node`
 * admits that Node (EBADENGINE otherwise), none is deprecated, and every package with an
 * install script has a decision in the root `allowScripts` (npm 11 lists the others).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/apps.js';

interface LockedPackage {
  version?: string;
  engines?: Record<string, string> | string[];
  deprecated?: string;
  hasInstallScript?: boolean;
  os?: string[];
  cpu?: string[];
}

const rootManifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  allowScripts?: Record<string, boolean | string>;
};
const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, LockedPackage>;
};
/** `node_modules/a/node_modules/@b/c` -> `@b/c`. */
const nameOf = (path: string): string =>
  path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
const installed = Object.entries(lock.packages).filter(([path]) => path.includes('node_modules/'));

/** The oldest Node the root's `engines` admits, and the one running these tests. */
const NODES = [semver.minVersion(rootManifest.engines.node)!.version, process.versions.node];

describe('npm ci installs without warnings', () => {
  it('the lockfile lists the packages it installs', () => {
    expect(installed.length).toBeGreaterThan(100);
    expect(NODES[0]).toBe('20.19.0');
  });

  it.each(NODES)('every locked package supports Node %s (no EBADENGINE)', (node) => {
    const unsupported = installed
      .filter(([, pkg]) => {
        const range = Array.isArray(pkg.engines) ? undefined : pkg.engines?.node;
        return range !== undefined && !semver.satisfies(node, range, { includePrerelease: true });
      })
      .map(
        ([path, pkg]) => `${path}@${pkg.version} wants node ${(pkg.engines as Record<string, string>).node}`,
      );
    expect(unsupported).toEqual([]);
  });

  it('no locked package is deprecated', () => {
    const deprecated = installed
      .filter(([, pkg]) => pkg.deprecated !== undefined)
      .map(([path, pkg]) => `${path}@${pkg.version}: ${pkg.deprecated}`);
    expect(deprecated).toEqual([]);
  });

  it('every install script has a decision in allowScripts', () => {
    const decided = new Set(Object.keys(rootManifest.allowScripts ?? {}));
    const withScripts = installed
      .filter(([, pkg]) => pkg.hasInstallScript === true)
      .map(([path]) => nameOf(path));
    expect(withScripts.length).toBeGreaterThan(0);
    expect([...new Set(withScripts)].filter((name) => !decided.has(name))).toEqual([]);
  });
});
