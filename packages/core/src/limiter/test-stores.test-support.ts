/**
 * Store wrappers for limiter tests: they count calls and can fail on demand around a real
 * MemoryStore. Test support only; not exported from the package.
 */
import { MemoryStore, type MemoryStoreCheckOptions } from '../stores/memory-store.js';
import type { Clock, Store, StoreEntry, StoreMode, StoreSettleEntry, StoreVerdict } from '../types.js';

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

  decide(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options?: MemoryStoreCheckOptions,
  ): Promise<StoreVerdict[]> {
    this.calls.push({ entries, mode });
    if (this.behaviour === 'error') return Promise.reject(new Error('connection refused'));
    if (this.behaviour === 'hang') return new Promise(() => {});
    return this.inner.decide(entries, mode, options);
  }

  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }

  /** Settles in the MemoryStore when `up`; rejects on `error`, never answers on `hang`. */
  settle(entries: readonly StoreSettleEntry[]): Promise<boolean[]> {
    if (this.behaviour === 'error') return Promise.reject(new Error('connection refused'));
    if (this.behaviour === 'hang') return new Promise(() => {});
    return this.inner.settle(entries);
  }
}

/**
 * A MemoryStore behind a switch that answers synchronously (`decideSync`): `up` decides, `error`
 * throws, `short` answers with too few verdicts (and charges nothing). Its `decide` throws, so a test that passes
 * shows the limiter never went through it.
 */
export class SyncSwitchableStore implements Store {
  readonly kind = 'sync-switchable';
  readonly inner: MemoryStore;
  behaviour: 'up' | 'error' | 'short' = 'up';
  syncCalls = 0;

  constructor(clock: Clock) {
    this.inner = new MemoryStore({ clock });
  }

  decide(): Promise<StoreVerdict[]> {
    throw new Error('decide() called on a store that answers synchronously');
  }

  decideSync(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options?: MemoryStoreCheckOptions,
  ): StoreVerdict[] {
    this.syncCalls++;
    if (this.behaviour === 'error') throw new Error('state corrupted');
    if (this.behaviour === 'short') return this.inner.decideSync(entries, 'peek').slice(1);
    return this.inner.decideSync(entries, mode, options);
  }

  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
}
