/** Decision listeners over a group of limiters that grows (the Nest module's own limiters). */
import type { Limiter } from '../limiter/limiter.js';
import type { DecisionEvent } from '../types.js';

type Listener = (event: DecisionEvent) => void;

/**
 * Limiters whose decisions go to the same listeners: a listener subscribed now also hears the
 * limiters added later, and unsubscribing leaves every one of them.
 */
export class DecisionFanout {
  readonly #limiters: Limiter[] = [];
  readonly #listeners = new Map<Listener, (() => void)[]>();

  /** Adds `limiter` to the group (every listener subscribes to it); returns it. */
  add(limiter: Limiter): Limiter {
    for (const [listener, offs] of this.#listeners) offs.push(limiter.onDecision(listener));
    this.#limiters.push(limiter);
    return limiter;
  }

  /** Subscribes `listener` to every limiter of the group, now and later; returns the unsubscribe. */
  onDecision(listener: Listener): () => void {
    this.#listeners.set(
      listener,
      this.#limiters.map((limiter) => limiter.onDecision(listener)),
    );
    return () => {
      for (const off of this.#listeners.get(listener) ?? []) off();
      this.#listeners.delete(listener);
    };
  }
}
