/**
 * A conformance table ported from envoyproxy/ratelimit's own tests: its integration scripts
 * (integration-test/scripts/*.sh, run through Envoy with examples/envoy/proxy.yaml, whose route
 * actions turn headers into the descriptors written out here), its example config
 * (examples/ratelimit/config/example.yaml, without the quota_mode services Sluice refuses) and
 * the config files of test/integration/runtime (basic.yaml, another.yaml). Each case runs
 * against a fresh key prefix; steps run in order.
 */

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
    name: 'the same descriptor twice (overlapping route and virtual host rate_limits): each counted in order',
    steps: [
      {
        descriptors: [['foo=twice'], ['foo=twice']],
        overall: 'OK',
        statuses: [
          { code: 'OK', remaining: 1, requestsPerUnit: 2 },
          { code: 'OK', remaining: 0, requestsPerUnit: 2 },
        ],
      },
      {
        descriptors: [['foo=again'], ['foo=again'], ['foo=again']],
        overall: 'OVER_LIMIT',
        statuses: [
          { code: 'OK', remaining: 1 },
          { code: 'OK', remaining: 0 },
          { code: 'OVER_LIMIT', remaining: 0 },
        ],
      },
      // All or nothing: the denied request charged nothing.
      { descriptors: [['foo=again'], ['foo=again']], overall: 'OK' },
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
