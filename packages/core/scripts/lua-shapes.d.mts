/** Types of the parts of lua-shapes.mjs the tests use (plain ESM: the build runs it before tsup). */

/** The decide features a shape may leave out, in bit order. */
export const DECIDE_FEATURES: readonly string[];

/** `text` with the feature sections cut for a script with `features`; throws naming `file` on bad markers. */
export function cutFeatures(text: string, features: readonly string[], file: string): string;

/** `chunk` without the top-level functions and plain locals nothing else in it names. */
export function dropUnused(chunk: string): string;

/** Throws when `chunk` names a top-level local of `full` that it does not declare. */
export function assertDeclared(chunk: string, full: string, shapeName: string): void;
