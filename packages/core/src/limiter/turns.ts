/**
 * Waiting for a turn: a check the store admitted at a future turn (`maxWaitMs`) sleeps exactly
 * until it on one timer, timed on the monotonic clock (a wall clock set back never delays it); a
 * cancel (the check's signal, `limiter.close()`) gives its units back.
 */
import { timerDelay } from '../monotonic.js';
import type { Clock, Decision, PolicyResult, StoreEntry, StoreVerdict } from '../types.js';
import { OverloadCounts } from './counters.js';
import { buildDecision } from './decision.js';

/** The turn of a check the store admitted: the longest `waitMs` of its verdicts, in ms (0: now). */
export function turnOf(verdicts: readonly StoreVerdict[]): number {
  let turnMs = 0;
  for (let i = 0; i < verdicts.length; i++) {
    const waitMs = verdicts[i]?.waitMs;
    if (waitMs !== undefined && waitMs > turnMs) turnMs = waitMs;
  }
  return turnMs;
}

/** The policy whose turn is latest: the one a waiting check is counted under. */
function waitingPolicy(entries: readonly StoreEntry[], verdicts: readonly StoreVerdict[]): string {
  let at = 0;
  for (let i = 1; i < verdicts.length; i++) {
    if ((verdicts[i]?.waitMs ?? 0) > (verdicts[at]?.waitMs ?? 0)) at = i;
  }
  return (entries[at] as StoreEntry).policy.name;
}

/**
 * The checks of one limiter waiting for their turn: at most `maxWaiting` at once, each counted from
 * when its wait is planned (`plan`, before the store call) until it ends (`end`), so checks still on
 * their way to the store count; beyond it a check is planned without waiting, so it is answered at
 * once. Each sleeps on one timer, all woken by `cancelAll`.
 */
export class Turns {
  /** The cancel of every check sleeping now. */
  readonly #cancels = new Set<() => void>();
  /** Checks whose wait is planned and not yet ended: on their way to the store, or sleeping. */
  #planned = 0;

  /**
   * @param maxWaiting most checks waiting at once in this process
   * @param counts the limiter's overload counters (`waiting`, `admittedAfterWait`, `cancelledWaits`)
   * @param clock the limiter's monotonic clock (`monotonicNow`): a check is admitted once it reads
   *   the turn, never before, and a wall clock set back never delays it
   */
  constructor(
    private readonly maxWaiting: number,
    private readonly counts: OverloadCounts,
    private readonly clock: Clock,
  ) {}

  /** Whether another check may plan a wait now. */
  get open(): boolean {
    return this.#planned < this.maxWaiting;
  }

  /** Counts a check whose wait was planned (its entries carry `maxWaitMs`), until its `end`. */
  plan(): void {
    this.#planned++;
  }

  /** A check whose wait was planned is done: answered at once, admitted at its turn, or cancelled. */
  end(): void {
    this.#planned--;
  }

  /**
   * Sleeps `turnMs` on one timer: true at the turn, false when `signal` aborted first (or had
   * already) or `cancelAll` ran. Counted as waiting under the policy whose turn is latest.
   */
  async sleep(
    turnMs: number,
    signal: AbortSignal | undefined,
    entries: readonly StoreEntry[],
    verdicts: readonly StoreVerdict[],
  ): Promise<boolean> {
    const policy = waitingPolicy(entries, verdicts);
    const { waiting } = this.counts;
    OverloadCounts.add(waiting, policy, 1);
    const turn = await this.#timer(this.clock() + turnMs, signal);
    OverloadCounts.add(waiting, policy, -1);
    OverloadCounts.add(turn ? this.counts.admittedAfterWait : this.counts.cancelledWaits, policy, 1);
    return turn;
  }

  /**
   * Resolves true once the limiter's monotonic clock reads `turnAtMs`, false on a cancel. A timer that fires
   * before (libuv counts whole ms, so up to a millisecond early; or one armed for the longest delay
   * a timer takes) is armed again for what is left.
   */
  #timer(turnAtMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    if (signal?.aborted === true) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let timer: ReturnType<typeof setTimeout>;
      const end = (turn: boolean): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', cancel);
        this.#cancels.delete(cancel);
        resolve(turn);
      };
      const cancel = (): void => end(false);
      const fire = (): void => {
        const restMs = turnAtMs - this.clock();
        if (restMs > 0) timer = setTimeout(fire, timerDelay(restMs));
        else end(true);
      };
      timer = setTimeout(fire, timerDelay(turnAtMs - this.clock()));
      signal?.addEventListener('abort', cancel, { once: true });
      this.#cancels.add(cancel);
    });
  }

  /**
   * Cancels every check waiting now (`limiter.close()`): each gives its units back and is denied.
   * The latest turn first: a turn gives back only the units no later turn stands on, so in this
   * order every one of them gives all back.
   */
  cancelAll(): void {
    for (const cancel of [...this.#cancels].reverse()) cancel();
  }
}

/**
 * The decision of a check whose wait was cancelled `leftMs` before its turn: denied, as if it had
 * been answered at once (outcome `over_limit`; each waiting policy denies with the time that was
 * left to its own turn; the others keep their results).
 */
export function cancelledDecision(
  decision: Decision,
  verdicts: readonly StoreVerdict[],
  waitedMs: number,
): Decision {
  const results: PolicyResult[] = decision.results.map((result, i) => {
    const waitMs = verdicts[i]?.waitMs;
    if (waitMs === undefined || waitMs <= 0) return result;
    return {
      ...result,
      allowed: false,
      outcome: 'over_limit',
      retryAfterMs: Math.max(1, Math.ceil(waitMs - waitedMs)),
    };
  });
  return buildDecision(results, decision.source);
}
