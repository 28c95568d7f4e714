/**
 * Counts Map iterations while `run` runs. A V8 Map iterated from the front walks every entry
 * deleted there since its last rehash, so on a table that evicts, each iteration is work that
 * grows with churn: a structure whose cost per operation stays flat iterates no Map at all.
 * Test support only; not exported from the package.
 */
export function countMapIterations(run: () => void): number {
  const proto = Map.prototype as unknown as Record<PropertyKey, (...args: unknown[]) => unknown>;
  const names: PropertyKey[] = ['keys', 'values', 'entries', 'forEach', Symbol.iterator];
  const originals = names.map((name) => proto[name]!);
  let count = 0;
  names.forEach((name, i) => {
    const original = originals[i]!;
    proto[name] = function (this: unknown, ...args: unknown[]) {
      count++;
      return original.apply(this, args);
    };
  });
  try {
    run();
  } finally {
    names.forEach((name, i) => {
      proto[name] = originals[i]!;
    });
  }
  return count;
}
