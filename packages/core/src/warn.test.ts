import { afterEach, describe, expect, it, vi } from 'vitest';
import { resetWarnings, WARNING_CODES, warnIfPermissiveTrustProxy } from './warn.js';

const PERMISSIVE = { setting: "Framework 'trust' is true", ipSource: 'req.ip', fix: 'Set it to 1.' };

describe('warnIfPermissiveTrustProxy', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    resetWarnings();
  });

  it('inspects each app once and warns once per process, with the code and what the adapter said', () => {
    resetWarnings();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const safe = {};
    const permissive = {};
    const other = {};
    const inspect = vi.fn((app: object) => (app === safe ? undefined : PERMISSIVE));
    warnIfPermissiveTrustProxy(safe, inspect);
    warnIfPermissiveTrustProxy(undefined, inspect);
    expect(warn).not.toHaveBeenCalled();
    warnIfPermissiveTrustProxy(permissive, inspect);
    warnIfPermissiveTrustProxy(permissive, inspect);
    warnIfPermissiveTrustProxy(other, inspect);
    expect(inspect).toHaveBeenCalledTimes(3);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toBe(
      `[${WARNING_CODES.PERMISSIVE_TRUST_PROXY}] Framework 'trust' is true, so req.ip comes from the left-most ` +
        'X-Forwarded-For entry that any client can set, and clients can choose their own rate-limit identity. ' +
        'Set it to 1.',
    );
  });
});
