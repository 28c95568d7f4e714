/**
 * The store fakes of every test (core, the adapters, test/integration): a store that is down, and
 * wrappers that count calls and fail on demand (or hold calls at a gate) around a real MemoryStore.
 * Test support only; not exported from the package.
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

/** A store that is down: every call rejects with `message`, so the limiter cannot decide. */
export function storeDown(message = 'store down'): Store {
  return {
    kind: 'failing',
    decide: () => Promise.reject(new Error(message)),
    reset: () => Promise.reject(new Error(message)),
  };
}

/** A MemoryStore whose calls can be held at a gate and then released to succeed or fail. */
export class GatedStore implements Store {
  readonly kind = 'gated';
  readonly inner: MemoryStore;
  failing = true;
  holding = false;
  calls = 0;
  private readonly held: { run: () => void; fail: () => void }[] = [];

  constructor(clock: Clock) {
    this.inner = new MemoryStore({ clock });
  }

  decide(entries: readonly StoreEntry[], mode: StoreMode): Promise<StoreVerdict[]> {
    this.calls++;
    if (this.holding) {
      return new Promise((resolve, reject) => {
        this.held.push({
          run: () => resolve(this.inner.decide(entries, mode)),
          fail: () => reject(new Error('connection refused')),
        });
      });
    }
    if (this.failing) return Promise.reject(new Error('connection refused'));
    return this.inner.decide(entries, mode);
  }

  /** Answers every held call: decided by the memory store, or failed. */
  release(outcome: 'succeed' | 'fail'): void {
    this.holding = false;
    for (const call of this.held.splice(0)) (outcome === 'succeed' ? call.run : call.fail)();
  }

  get heldCount(): number {
    return this.held.length;
  }

  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
}
