import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decision, result } from './fixtures.test-util.js';
import { type ProblemBody, problemJson, quotaExceededProblem, unavailableProblem } from './problem.js';
import { longestWaitPolicy, retryAfterSeconds } from './retry-after.js';

const denied = decision([
  result({ policy: 'burst', allowed: false, outcome: 'over_limit', remaining: 0, retryAfterMs: 2500 }),
]);

/** One change to a body: a field replaced, removed or added. */
const changeArb = fc.oneof(
  fc.record({
    field: fc.constantFrom(
      'type',
      'title',
      'status',
      'error',
      'violated-policies',
      'policy',
      'retry_after_seconds',
    ),
    value: fc.oneof(
      fc.constantFrom<unknown>(
        'about:blank',
        503,
        429,
        'Service Unavailable',
        'rate limiter unavailable',
        ['burst', 'x'],
        [],
        'burst',
        '3',
        3,
        null,
      ),
      fc.string(),
      fc.integer(),
    ),
  }),
  fc.record({
    field: fc.constantFrom('type', 'title', 'status', 'error', 'policy', 'retry_after_seconds', 'extra'),
    value: fc.constant(undefined),
  }),
  fc.record({ field: fc.constant('extra'), value: fc.string() }),
);

function changed(body: ProblemBody, change: { field: string; value: unknown }): ProblemBody {
  const copy: Record<string, unknown> = { ...body };
  if (change.value === undefined) delete copy[change.field];
  else copy[change.field] = change.value;
  return copy as unknown as ProblemBody;
}

describe('problemJson', () => {
  it('serializes the standard bodies exactly as JSON.stringify does', () => {
    const quota = quotaExceededProblem(denied);
    expect(problemJson(quota)).toBe(JSON.stringify(quota));
    expect(problemJson(quota)).toBe(JSON.stringify(quota)); // from the cache
    expect(problemJson(unavailableProblem())).toBe(JSON.stringify(unavailableProblem()));
  });

  it('serializes any changed body as it is: the cached forms never stand in for another body', () => {
    fc.assert(
      fc.property(fc.constantFrom('quota', 'unavailable'), changeArb, (kind, change) => {
        const base = kind === 'quota' ? quotaExceededProblem(denied) : unavailableProblem();
        const body = changed(base, change);
        expect(JSON.parse(problemJson(body))).toEqual(JSON.parse(JSON.stringify(body)));
      }),
      { numRuns: 400 },
    );
  });

  it('serializes bodies with other policy names and waits correctly after the cache was filled', () => {
    for (let i = 0; i < 1100; i++) {
      const body = quotaExceededProblem(
        decision([
          result({ policy: `p${i}`, allowed: false, outcome: 'over_limit', retryAfterMs: 1000 * (i % 7) }),
        ]),
      );
      expect(problemJson(body)).toBe(JSON.stringify(body));
    }
  });
});

describe('the policy a 429 names and its wait', () => {
  it('falls back to the decision itself when it carries no per-policy results', () => {
    const bare = decision([], { outcome: 'over_limit', allowed: false, policy: 'daily', retryAfterMs: 4200 });
    expect(longestWaitPolicy(bare)).toBe('daily');
    expect(retryAfterSeconds(bare)).toBe(5);
    expect(quotaExceededProblem(bare)).toMatchObject({
      policy: 'daily',
      'violated-policies': ['daily'],
      retry_after_seconds: 5,
    });
    expect(longestWaitPolicy(decision([], { outcome: 'allowed', policy: 'daily' }))).toBeUndefined();
    expect(longestWaitPolicy(decision([], { outcome: 'unavailable', policy: 'daily' }))).toBeUndefined();
    expect(quotaExceededProblem(decision([], { outcome: 'allowed', policy: undefined }))).not.toHaveProperty(
      'policy',
    );
  });

  it('takes the longest wait and the first policy on a tie, negative waits counting as 0', () => {
    const deny = (policy: string, retryAfterMs: number) =>
      result({ policy, allowed: false, outcome: 'over_limit', remaining: 0, retryAfterMs });
    expect(longestWaitPolicy(decision([deny('a', 3000), deny('b', 3000)]))).toBe('a');
    expect(longestWaitPolicy(decision([deny('a', 1000), deny('b', 3000)]))).toBe('b');
    expect(retryAfterSeconds(decision([deny('a', 1000), deny('b', 3000)]))).toBe(3);
    expect(retryAfterSeconds(decision([deny('a', 3000), deny('b', 1000)]))).toBe(3);
    expect(retryAfterSeconds(decision([deny('never', -1)]))).toBe(1);
    expect(retryAfterSeconds(decision([deny('never', -1), deny('b', 2500)]))).toBe(3);
  });
});
