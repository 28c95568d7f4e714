/** Start-up: be able to decide before printing "listening on". */
import type { Limiter } from '@sluice/core';

/**
 * Asks the store once (a `peek`, which charges nothing and records nothing) so the Redis
 * connection is open and the script loaded before the first request arrives. Retries for up to
 * `budgetMs` while the store cannot answer; if it still cannot (Redis down at start), the app
 * starts anyway and each policy's fail mode applies.
 */
export async function warmUp(limiter: Limiter, budgetMs = 3000): Promise<void> {
  const deadline = Date.now() + budgetMs;
  for (;;) {
    const decision = await limiter.peek({ identity: 'startup-warm-up', policies: ['strict'] });
    if (decision.outcome !== 'unavailable' || Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
