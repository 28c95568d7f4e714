/**
 * A conformance table ported from envoyproxy/ratelimit's own tests: its integration scripts
 * (integration-test/scripts/*.sh, run through Envoy with examples/envoy/proxy.yaml, whose route
 * actions turn headers into the descriptors written out here), its example config
 * (examples/ratelimit/config/example.yaml, without the quota_mode services Sluice refuses) and
 * the config files of test/integration/runtime (basic.yaml, another.yaml). Each case runs
 * against a fresh key prefix; steps run in order.
 */

/** examples/ratelimit/config/example.yaml of the reference, the `quota_mode` services left out. */
export const EXAMPLE_YAML = `
domain: rl
descriptors:
  - key: category
    value: account
    rate_limit:
      replaces:
        - name: bkthomps
        - name: fake_name
      unit: minute
      requests_per_unit: 4
  - key: source_cluster
    value: proxy
    descriptors:
      - key: destination_cluster
        value: bkthomps
        rate_limit:
          replaces:
            - name: bkthomps
          unit: minute
          requests_per_unit: 2
      - key: destination_cluster
        value: mock
        rate_limit: { unit: minute, requests_per_unit: 1 }
      - key: destination_cluster
        value: override
        rate_limit:
          replaces:
            - name: banned_limit
          unit: minute
          requests_per_unit: 2
      - key: destination_cluster
        value: fake
        rate_limit: { name: fake_name, unit: minute, requests_per_unit: 2 }
  - key: foo
    rate_limit: { unit: minute, requests_per_unit: 2 }
    descriptors:
      - key: bar
        rate_limit: { unit: minute, requests_per_unit: 3 }
      - key: bar
        value: bkthomps
        rate_limit: { name: bkthomps, unit: minute, requests_per_unit: 1 }
      - key: bar
        value: banned
        rate_limit: { name: banned_limit, unit: minute, requests_per_unit: 0 }
      - key: baz
        rate_limit: { unit: second, requests_per_unit: 1 }
      - key: baz
        value: not-so-shady
        rate_limit: { unit: minute, requests_per_unit: 3 }
      - key: baz
        value: shady
        rate_limit: { unit: minute, requests_per_unit: 3 }
        shadow_mode: true
      - key: bay
        rate_limit: { unlimited: true }
  - key: unspec
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: qux
    rate_limit: { unlimited: true }
`;

/** test/integration/runtime/current/ratelimit/config/basic.yaml and another.yaml, plus wildcards. */
export const OTHER_DOMAINS: Readonly<Record<string, string>> = {
  'basic.yaml': `
domain: basic
descriptors:
  - key: key1
    rate_limit: { unit: second, requests_per_unit: 50 }
  - key: one_per_minute
    rate_limit: { unit: minute, requests_per_unit: 1 }
`,
  'another.yaml': `
domain: another
descriptors:
  - key: key2
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: key3
    rate_limit: { unit: hour, requests_per_unit: 10 }
  - key: key4
    rate_limit: { unit: day, requests_per_unit: 20 }
`,
  'wildcard.yaml': `
domain: wild
descriptors:
  - key: path
    value: /api/*
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 2 }
  - key: tenant
    descriptors:
      - key: route
        rate_limit: { unit: minute, requests_per_unit: 2 }
`,
};

/** One call: descriptors as `key=value` lists, and what the answer must say. */
export interface Step {
  readonly domain?: string;
  readonly descriptors: readonly (readonly string[])[];
  /** Request-level `hits_addend`. */
  readonly hits?: number;
  /** Per-descriptor `hits_addend` (undefined: unset). */
  readonly descriptorHits?: readonly (number | undefined)[];
  readonly overall: 'OK' | 'OVER_LIMIT';
  /** Per descriptor: code and `limit_remaining` (and the limit when given). */
  readonly statuses?: readonly { code: 'OK' | 'OVER_LIMIT'; remaining?: number; requestsPerUnit?: number }[];
}

/** One case of the table. */
export interface Case {
  readonly name: string;
  readonly steps: readonly Step[];
}

const twoheader = (foo: string, extra: Record<string, string>): string[][] => {
  const out: string[][] = [];
  if (extra.bar !== undefined) out.push([`foo=${foo}`, `bar=${extra.bar}`]);
  if (extra.baz !== undefined) out.push([`foo=${foo}`, `baz=${extra.baz}`]);
  return out;
};
const fourheader = (foo: string, bar: string, destination: string): string[][] => [
  [`foo=${foo}`, `bar=${bar}`],
  ['source_cluster=proxy', `destination_cluster=${destination}`],
];
const fiveheader = (foo: string, bar: string, destination: string, category: string): string[][] => [
  ...fourheader(foo, bar, destination),
  [`category=${category}`],
];
const ok = (descriptors: string[][]): Step => ({ descriptors, overall: 'OK' });
const limited = (descriptors: string[][]): Step => ({ descriptors, overall: 'OVER_LIMIT' });
const MAX_UINT32 = 4_294_967_295;

/** The table. */
export const CASES: readonly Case[] = [
  { name: 'simple get (simple-get.sh)', steps: [ok(twoheader('test', { baz: 'shady' }))] },
  {
    name: 'trigger the limit (trigger-ratelimit.sh)',
    steps: [
      {
        descriptors: twoheader('pelle', { baz: 'not-so-shady' }),
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 2, requestsPerUnit: 3 }],
      },
      ok(twoheader('pelle', { baz: 'not-so-shady' })),
      ok(twoheader('pelle', { baz: 'not-so-shady' })),
      {
        descriptors: twoheader('pelle', { baz: 'not-so-shady' }),
        overall: 'OVER_LIMIT',
        statuses: [{ code: 'OVER_LIMIT', remaining: 0 }],
      },
      limited(twoheader('pelle', { baz: 'not-so-shady' })),
    ],
  },
  {
    name: 'shadow mode per rule (trigger-shadow-mode-key.sh)',
    steps: [
      ...Array.from({ length: 5 }, () => ok(twoheader('pelle', { baz: 'shady' }))),
      {
        descriptors: twoheader('pelle', { baz: 'shady' }),
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 0 }],
      },
    ],
  },
  {
    name: 'replaces (replaces.sh)',
    steps: [
      limited(twoheader('bkthomps', { bar: 'banned' })),
      limited(fourheader('bkthomps', 'banned', 'mock')),
      ok(fourheader('bkthomps', 'banned', 'override')),
      ok(fourheader('bkthomps', 'banned', 'override')),
      limited(fourheader('bkthomps', 'banned', 'override')),
      ok(fourheader('my_foo', 'bkthomps', 'bkthomps')),
      ok(fourheader('my_foo', 'bkthomps', 'bkthomps')),
      limited(fourheader('my_foo', 'bkthomps', 'bkthomps')),
      ok(fourheader('my_foo', 'bkthomps', 'not_bkthomps')),
      limited(fourheader('my_foo', 'bkthomps', 'not_bkthomps')),
      limited(fourheader('my_foo', 'bkthomps', 'bkthomps')),
      ...Array.from({ length: 4 }, () => ok(fiveheader('my_foo', 'bkthomps', 'fake', 'account'))),
      limited(fiveheader('my_foo', 'bkthomps', 'fake', 'account')),
      ok(twoheader('foo_2', { bar: 'bkthomps' })),
      limited(twoheader('foo_2', { bar: 'bkthomps' })),
      ok(fourheader('foo_3', 'bar_3', 'fake')),
      ok(fourheader('foo_3', 'bar_3', 'fake')),
      limited(fourheader('foo_3', 'bar_3', 'fake')),
      limited(fiveheader('my_foo', 'bkthomps', 'fake', 'account')),
    ],
  },
  {
    name: 'a value the config leaves unspecified (value-included-in-stats-key-when-unspecified.sh)',
    steps: [
      ok([['unspec=unspecified_value']]),
      ok([['unspec=unspecified_value']]),
      limited([['unspec=unspecified_value']]),
    ],
  },
  {
    name: 'unlimited: OK with the largest remaining, never counted',
    steps: [
      { descriptors: [['qux=anything']], overall: 'OK', statuses: [{ code: 'OK', remaining: MAX_UINT32 }] },
      {
        descriptors: [['foo=u1', 'bay=x']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: MAX_UINT32 }],
      },
    ],
  },
  {
    name: 'nested descriptors: a key-only child counts per value; the parent rule counts the parent alone',
    steps: [
      {
        descriptors: [['foo=n1', 'bar=b1']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 2, requestsPerUnit: 3 }],
      },
      { descriptors: [['foo=n1', 'bar=b2']], overall: 'OK', statuses: [{ code: 'OK', remaining: 2 }] },
      {
        descriptors: [['foo=n1']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 1, requestsPerUnit: 2 }],
      },
      { descriptors: [['foo=n1', 'unknown=1']], overall: 'OK', statuses: [{ code: 'OK', remaining: 0 }] },
    ],
  },
  {
    name: 'wildcards and share_threshold',
    steps: [
      {
        domain: 'wild',
        descriptors: [['path=/api/a']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 1 }],
      },
      {
        domain: 'wild',
        descriptors: [['path=/api/b']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 1 }],
      },
      {
        domain: 'wild',
        descriptors: [['path=/web/a']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 0 }],
      },
      {
        domain: 'wild',
        descriptors: [['files=files/a']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 1 }],
      },
      {
        domain: 'wild',
        descriptors: [['files=files/b']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 0 }],
      },
      { domain: 'wild', descriptors: [['files=files/c']], overall: 'OVER_LIMIT' },
    ],
  },
  {
    name: 'hits_addend: on the request, per descriptor, 0 looks without charging',
    steps: [
      {
        domain: 'another',
        descriptors: [['key3=h']],
        hits: 4,
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 6 }],
      },
      {
        domain: 'another',
        descriptors: [['key3=h']],
        descriptorHits: [0],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 6 }],
      },
      { domain: 'another', descriptors: [['key3=h']], descriptorHits: [7], overall: 'OVER_LIMIT' },
      {
        domain: 'another',
        descriptors: [['key3=h']],
        hits: 6,
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 0 }],
      },
      {
        domain: 'another',
        descriptors: [['key3=h']],
        descriptorHits: [0],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 0 }],
      },
    ],
  },
  {
    name: 'multiple domains keep separate counters',
    steps: [
      { domain: 'basic', descriptors: [['one_per_minute=m']], overall: 'OK' },
      { domain: 'basic', descriptors: [['one_per_minute=m']], overall: 'OVER_LIMIT' },
      {
        domain: 'another',
        descriptors: [['key2=m']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 19 }],
      },
      {
        domain: 'nowhere',
        descriptors: [['one_per_minute=m']],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 0 }],
      },
    ],
  },
  {
    name: 'all or nothing: when one descriptor is over the limit, no descriptor is charged',
    steps: [
      {
        domain: 'another',
        descriptors: [['key4=a'], ['key3=a']],
        hits: 10,
        overall: 'OK',
        statuses: [
          { code: 'OK', remaining: 10 },
          { code: 'OK', remaining: 0 },
        ],
      },
      {
        domain: 'another',
        descriptors: [['key4=a'], ['key3=a']],
        overall: 'OVER_LIMIT',
        statuses: [{ code: 'OK' }, { code: 'OVER_LIMIT', remaining: 0 }],
      },
      {
        domain: 'another',
        descriptors: [['key4=a']],
        descriptorHits: [0],
        overall: 'OK',
        statuses: [{ code: 'OK', remaining: 10 }],
      },
    ],
  },
];
