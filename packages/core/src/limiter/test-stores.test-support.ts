/**
 * Store wrappers for limiter tests: they count calls and can fail on demand around a real
 * MemoryStore. Test support only; not exported from the package.
 */
import { MemoryStore, type MemoryStoreCheckOptions } from '../stores/memory-store.js';
import type { Clock, Store, StoreEntry, StoreMode, StoreVerdict } from '../types.js';

/** How a `SwitchableStore` behaves. */
export type StoreBehaviour = 'up' | 'error' | 'hang';

/** A MemoryStore behind a switch: `up` decides, `error` rejects, `hang` never answers. */
export class SwitchableStore implements Store {
  readonly kind = 'switchable';
  readonly inner: MemoryStore;
  behaviour: StoreBehaviour = 'up';
  calls: { entries: readonly StoreEntry[]; mode: StoreMode }[] = [];

  constructor(clock: Clock) {
    this.inner = new MemoryStore({ clock });
  }

  check(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options?: MemoryStoreCheckOptions,
  ): Promise<StoreVerdict[]> {
    this.calls.push({ entries, mode });
    if (this.behaviour === 'error') return Promise.reject(new Error('connection refused'));
    if (this.behaviour === 'hang') return new Promise(() => {});
    return this.inner.check(entries, mode, options);
  }

  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
}
