/**
 * The config loader against envoyproxy/ratelimit's own config tests (test/config/*.yaml and
 * config_test.go): the same files load or fail the same way, and GetLimit's matching is ported.
 */
import { describe, expect, it } from 'vitest';
import { findRule, wildcardMatch } from './match.js';
import { parseConfig } from './parse.js';
import { ConfigError } from './types.js';

const load = (text: string, name = 'test.yaml') => parseConfig([{ name, text }]);
const entries = (...pairs: [string, string][]) => pairs.map(([key, value]) => ({ key, value }));

/** test/config/wildcard.yaml of the reference. */
const WILDCARD = `
domain: test-domain
descriptors:
  - key: wild
    value: foo*
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: noWild
    value: foo
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: noVal
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: midWild
    value: bar*b
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: multiWild
    value: foo*bar*baz
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: nestedWild
    value: val1
    descriptors:
      - key: wild
        value: goo*
        rate_limit: { unit: minute, requests_per_unit: 20 }
`;

describe('matching (config_test.go TestWildcardConfig, TestBasicConfig)', () => {
  const config = load(WILDCARD);
  const rule = (...pairs: [string, string][]) => findRule(config, 'test-domain', entries(...pairs))?.rule.id;

  it('a key without value matches every value, one rule', () => {
    expect(rule(['noVal', 'foo1'])).toBe('noVal');
    expect(rule(['noVal', 'foo2'])).toBe('noVal');
  });
  it('wildcards match by prefix, middle and several stars; nested wildcards too', () => {
    expect(rule(['wild', 'foo1'])).toBe('wild_foo*');
    expect(rule(['wild', 'foo'])).toBe('wild_foo*');
    expect(rule(['nestedWild', 'val1'], ['wild', 'goo2'])).toBe('nestedWild_val1.wild_goo*');
    expect(rule(['midWild', 'barab'])).toBe('midWild_bar*b');
    expect(rule(['midWild', 'bar123b'])).toBe('midWild_bar*b');
    expect(rule(['multiWild', 'fooXbarYbaz'])).toBe('multiWild_foo*bar*baz');
  });
  it('no match for other values, and a plain value never matches eagerly', () => {
    expect(rule(['wild', 'bar'])).toBeUndefined();
    expect(rule(['noWild', 'foo1'])).toBeUndefined();
    expect(rule(['midWild', 'barb1'])).toBeUndefined();
    expect(rule(['multiWild', 'foobaz'])).toBeUndefined();
  });
  it('a rule applies only at the depth of the last entry; unknown domains match nothing', () => {
    expect(rule(['nestedWild', 'val1'])).toBeUndefined();
    expect(rule(['noVal', 'x'], ['extra', 'y'])).toBeUndefined();
    expect(findRule(config, 'other', entries(['noVal', 'x']))).toBeUndefined();
  });
  it('wildcardMatch: each * matches zero or more characters', () => {
    expect(wildcardMatch(['a', 'b', 'c'], 'abc')).toBe(true);
    expect(wildcardMatch(['ab', 'bc'], 'abc')).toBe(false);
    expect(wildcardMatch(['x'], 'x')).toBe(true);
  });
  it('share_threshold: every value matching the wildcard counts on one counter', () => {
    const shared = load(`
domain: d
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 10 }
  - key: other
    value: other/*
    rate_limit: { unit: hour, requests_per_unit: 10 }
`);
    const a = findRule(shared, 'd', entries(['files', 'files/a']));
    const b = findRule(shared, 'd', entries(['files', 'files/b']));
    expect(a?.counterEntries).toEqual(entries(['files', 'files/*']));
    expect(b?.counterEntries).toEqual(a?.counterEntries);
    expect(findRule(shared, 'd', entries(['other', 'other/a']))?.counterEntries).toEqual(
      entries(['other', 'other/a']),
    );
  });
});

describe('rules', () => {
  it('without Sluice keys a rule is a fixed window of one unit; Sluice keys choose the algorithm', () => {
    const config = load(`
domain: d
descriptors:
  - key: plain
    rate_limit: { unit: second, requests_per_unit: 5 }
  - key: bucket
    rate_limit: { unit: minute, requests_per_unit: 60, algorithm: token-bucket, burst: 10, fail_mode: open }
  - key: blocked
    rate_limit: { unit: second, requests_per_unit: 0 }
  - key: free
    rate_limit: { unlimited: true }
`);
    const [plain, bucket, blocked, free] = config.rules;
    expect(plain?.policy).toMatchObject({ algorithm: 'fixed-window', limit: 5, windowMs: 1000 });
    expect(plain?.failMode).toBe('closed');
    expect(bucket?.policy).toMatchObject({ algorithm: 'token-bucket', limit: 10 });
    expect(bucket?.failMode).toBe('open');
    expect(blocked?.policy).toBeUndefined();
    expect(free).toMatchObject({ unlimited: true, policy: undefined, unit: undefined });
  });
});

/** Each bad file of the reference's test/config, plus Sluice's own refusals. */
const BAD: [string, string, RegExp][] = [
  ['bad_yaml', 'domain: d\ndescriptors:\n  - key: a\n   value: b', /test\.yaml: error loading config file/],
  [
    'bad_limit_unit',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }',
    /domain "d", descriptor "a": invalid rate limit unit 'fortnight'/,
  ],
  [
    'duplicate_key',
    'domain: d\ndescriptors:\n  - key: a\n  - key: a',
    /descriptor "a": duplicate descriptor composite key 'd.a'/,
  ],
  ['duplicate YAML key', 'domain: d\ndomain: e', /test\.yaml: error loading config file: .*[Uu]nique/],
  ['empty_domain', 'descriptors: []', /cannot have empty domain/],
  ['empty_key', 'domain: d\ndescriptors:\n  - value: b', /descriptor has empty key/],
  [
    'misspelled_key',
    'domain: d\ndescriptors:\n  - key: a\n    ratelimit: { unit: second }',
    /unknown key 'ratelimit'/,
  ],
  [
    'misspelled_key2',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, limit: 3 }',
    /unknown key 'limit'/,
  ],
  ['non_map_list', 'domain: d\ndescriptors:\n  - a\n  - b', /descriptors must be a list of maps/],
  [
    'replaces_empty',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, replaces: [{ name: "" }] }',
    /empty replaces entry/,
  ],
  [
    'replaces_self',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { name: n, unit: second, requests_per_unit: 1, replaces: [{ name: n }] }',
    /replaces should not contain name of same descriptor/,
  ],
  [
    'unlimited_with_unit',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unlimited: true, unit: second }',
    /should not specify rate limit unit when unlimited/,
  ],
  [
    'share_threshold without wildcard',
    'domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true',
    /share_threshold can only be used with wildcard values/,
  ],
  [
    'quota_mode',
    'domain: d\ndescriptors:\n  - key: a\n    quota_mode: true',
    /descriptor "a": quota_mode is not supported by sluice-server/,
  ],
  ['metadata', 'domain: d\ndescriptors:\n  - key: a\n    metadata: { x: 1 }', /metadata .* is not supported/],
  [
    'requests_per_unit out of range',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: -1 }',
    /requests_per_unit must be an integer from 0 to 4294967295, got -1/,
  ],
  [
    'requests_per_unit fraction',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1.5 }',
    /got 1\.5/,
  ],
  [
    'unknown algorithm',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, algorithm: leaky }',
    /algorithm must be one of .*got "leaky"/,
  ],
  [
    'a concurrency algorithm',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, algorithm: concurrency }',
    /algorithm must be one of token-bucket, gcra, sliding-window, fixed-window, sliding-log, got "concurrency" \(a concurrency policy needs a release/,
  ],
  [
    'unknown fail_mode',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, fail_mode: maybe }',
    /fail_mode must be one of closed, open, local, got "maybe"/,
  ],
  [
    'burst on a window',
    'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, burst: 5 }',
    /descriptor "a": .*burst/,
  ],
  [
    'nested problem',
    'domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        value: c\n        rate_limit: { unit: eon, requests_per_unit: 1 }',
    /descriptor "a.b_c": invalid rate limit unit 'eon'/,
  ],
];

describe('bad files: a ConfigError naming the file, domain and descriptor', () => {
  it.each(BAD)('%s', (_name, text, message) => {
    let caught: unknown;
    try {
      load(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message.startsWith('test.yaml')).toBe(true);
  });

  it('duplicate_domain: a domain in two files', () => {
    const file = { name: 'a.yaml', text: 'domain: d\ndescriptors: []' };
    expect(() => parseConfig([file, { ...file, name: 'b.yaml' }])).toThrow(
      /^b\.yaml, domain "d": duplicate domain 'd'/,
    );
  });

  it('detailed_metric and value_to_metric are accepted', () => {
    expect(() =>
      load('domain: d\ndescriptors:\n  - key: a\n    detailed_metric: true\n    value_to_metric: true'),
    ).not.toThrow();
  });
});

describe('YAML 1.1, read as gopkg.in/yaml.v2 reads it', () => {
  const rule = (config: ReturnType<typeof load>, ...pairs: [string, string][]) =>
    findRule(config, 'd', entries(...pairs))?.rule;

  it('a string field keeps the text of its scalar: 01234, 1.10, 0x1F, 1e3, yes, a date', () => {
    const config = load(`
domain: d
descriptors:
  - key: zip
    value: 01234
    rate_limit: { name: 010, unit: minute, requests_per_unit: 1 }
  - key: version
    value: 1.10
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: hex
    value: 0x1F
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: exp
    value: 1e3
    rate_limit: { unit: minute, requests_per_unit: 4 }
  - key: flag
    value: yes
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: 8080
    value: 2024-01-31
    rate_limit: { unit: minute, requests_per_unit: 6 }
  - key: empty
    value: ~
    rate_limit: { unit: minute, requests_per_unit: 7 }
`);
    expect(rule(config, ['zip', '01234'])).toMatchObject({
      id: 'zip_01234',
      name: '010',
      requestsPerUnit: 1,
    });
    expect(rule(config, ['zip', '1234'])).toBeUndefined();
    expect(rule(config, ['version', '1.10'])?.requestsPerUnit).toBe(2);
    expect(rule(config, ['version', '1.1'])).toBeUndefined();
    expect(rule(config, ['hex', '0x1F'])?.requestsPerUnit).toBe(3);
    expect(rule(config, ['exp', '1e3'])?.requestsPerUnit).toBe(4);
    expect(rule(config, ['flag', 'yes'])?.requestsPerUnit).toBe(5);
    expect(rule(config, ['8080', '2024-01-31'])?.requestsPerUnit).toBe(6);
    // A null value is no value: the key alone, any value.
    expect(rule(config, ['empty', 'anything'])?.requestsPerUnit).toBe(7);
  });

  it('merge keys from an anchor in the descriptors, yes/no, 1_000, octal', () => {
    const config = load(`
domain: d
descriptors:
  - key: a
    shadow_mode: yes
    rate_limit: &per-minute { unit: minute, requests_per_unit: 1_000 }
  - key: b
    shadow_mode: no
    rate_limit:
      <<: *per-minute
      requests_per_unit: 010
`);
    expect(rule(config, ['a', 'x'])).toMatchObject({ shadow: true, unit: 'MINUTE', requestsPerUnit: 1000 });
    expect(rule(config, ['b', 'x'])).toMatchObject({ shadow: false, unit: 'MINUTE', requestsPerUnit: 8 });
  });

  it('several documents in one file: the first is read', () => {
    const config = load(`
domain: d
descriptors:
  - key: a
    rate_limit: { unit: minute, requests_per_unit: 1 }
---
domain: e
descriptors: []
`);
    expect([...config.domains.keys()]).toEqual(['d']);
    expect(rule(config, ['a', 'x'])?.requestsPerUnit).toBe(1);
  });

  it('a syntax error names the file and the line', () => {
    expect(() =>
      parseConfig([{ name: 'edge.yaml', text: 'domain: d\ndescriptors:\n  - key: a\n    value: [b\n' }]),
    ).toThrow(/^edge\.yaml: error loading config file: line \d+, column \d+: /);
    expect(() =>
      parseConfig([{ name: 'edge.yaml', text: 'domain: d\ndescriptors:\n  - key: a\n   value: b' }]),
    ).toThrow(/^edge\.yaml: error loading config file: line 4, column \d+: /);
  });
});
