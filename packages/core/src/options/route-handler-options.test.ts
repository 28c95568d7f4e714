import { describe, expect, it } from 'vitest';
import { routePolicyNames, routeRequestOptions } from './route-handler-options.js';
import { routeLimit } from './route-options.js';

class Payments {
  create() {}
}

describe('routePolicyNames', () => {
  const all = ['a', 'b', 'c'];

  it("takes the route's names, else the module's defaults, else all, less those skipped", () => {
    const named = routeLimit<unknown>(['a', 'b'], Payments.prototype, 'create');
    expect(routePolicyNames(named, ['c'], all, ['b'])).toEqual(['a']);
    expect(routePolicyNames(undefined, ['c'], all, undefined)).toEqual(['c']);
    expect(routePolicyNames(undefined, undefined, all, ['a'])).toEqual(['b', 'c']);
    expect(routePolicyNames(undefined, undefined, all, ['a', 'b', 'c'])).toBeUndefined();
  });

  it("names a route's own policy <Class>.<method>", () => {
    const own = routeLimit<unknown>([{ limit: 5, window: '1m' }], Payments.prototype, 'create');
    expect(routePolicyNames(own, undefined, all, undefined)).toEqual(['Payments.create']);
  });

  it('keeps a function of the request, even one that takes no argument, and drops the skipped names it answers', async () => {
    const noArgument = () => ['a', 'b'];
    expect(routePolicyNames(undefined, noArgument, all, undefined)).toBe(noArgument);
    const chosen = routePolicyNames(undefined, noArgument, all, ['b']) as (req: unknown) => unknown;
    expect(await chosen({})).toEqual(['a']);
  });
});

describe('routeRequestOptions', () => {
  it("takes the module's request options and the route's cost and settle options over the module's", () => {
    const route = routeLimit<unknown>(
      [{ policies: ['a'], cost: 3, skipFailedRequests: true }],
      Payments,
      undefined,
    );
    const module = { headers: 'draft-7', cost: 1, store: {}, requestWasSuccessful: () => true };
    const { options, skips } = routeRequestOptions(module, route);
    expect(skips).toBe(true);
    expect(options).toEqual({
      headers: 'draft-7',
      cost: 3,
      skipFailedRequests: true,
      requestWasSuccessful: module.requestWasSuccessful,
    });
  });

  it("drops the module's requestWasSuccessful on a route that does not skip", () => {
    const { options, skips } = routeRequestOptions({ requestWasSuccessful: () => true }, undefined);
    expect([skips, options]).toEqual([false, {}]);
  });
});
