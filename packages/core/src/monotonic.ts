/** A monotonic clock in ms where there is one (every modern runtime), else the wall clock. Web-standard. */
export const monotonicNow = (): number => globalThis.performance?.now() ?? Date.now();
