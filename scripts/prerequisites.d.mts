/** Types of prerequisites.mjs (plain ESM, so that it runs before `npm ci`). */

/** One program the suite needs. */
export interface Prerequisite {
  readonly program: string;
  readonly commands: string[];
  readonly args?: string[];
  readonly usedFor: string;
  readonly apt: string;
  readonly brew: string;
}

/** Every program outside npm the test suite runs. */
export const PREREQUISITES: readonly Prerequisite[];

/** The path of the first of `prerequisite.commands` found that passes its `args`, or `undefined`. */
export function locate(prerequisite: Prerequisite, env?: NodeJS.ProcessEnv): string | undefined;

/** The Python that runs the service's gRPC client tests (one with grpcio), or `undefined`. */
export function grpcPython(env?: NodeJS.ProcessEnv): string | undefined;

/** The prerequisites missing with this environment's PATH. */
export function missingPrerequisites(env?: NodeJS.ProcessEnv): Prerequisite[];

/** The Debian packages that install `missing`, each once, in order. */
export function aptPackages(missing: readonly Prerequisite[]): string[];

/** The block `npm test` prints: each missing program, what needs it, and the install commands. */
export function formatMissing(missing: readonly Prerequisite[]): string;
