// Core's entry for tests, from source. Also re-exports the HTTP layer directly until core's
// index exports it (a name exported twice from the same module is not a conflict).
export * from '../../core/src/http/index.js';
export * from '../../core/src/index.js';
