/**
 * A vitest project that runs @sluice/nestjs's own tests against another Nest major: the
 * workspace beside the config installs that major (its own node_modules, so Nest's packages
 * load each other from there), and every `@nestjs/*` import of the tests and of the adapter's
 * source is pointed at it. Nest 12, the version the adapter builds with, runs in the `nestjs`
 * project itself.
 */
import { fileURLToPath } from 'node:url';
import { defineProject } from 'vitest/config';

const nestjs = (path: string) => fileURLToPath(new URL(`../packages/nestjs/${path}`, import.meta.url));
const core = (path: string) => fileURLToPath(new URL(`../packages/core/src/${path}`, import.meta.url));

/** The project for the workspace whose vitest.config.ts passes its `import.meta.url`. */
export function nestProject(configUrl: string, name: string) {
  const modules = fileURLToPath(new URL('./node_modules/@nestjs/', configUrl));
  return defineProject({
    resolve: {
      alias: [
        { find: /^@nestjs\/([a-z-]+)(\/.*)?$/, replacement: `${modules}$1$2` },
        { find: /^@sluice\/core$/, replacement: core('index.ts') },
        { find: /^@sluice\/core\/adapter$/, replacement: core('adapter.ts') },
        { find: /^@sluice\/core\/node$/, replacement: core('node/index.ts') },
      ],
    },
    test: { name, dir: nestjs('src'), include: ['**/rate-limit.test.ts'] },
  });
}
