/**
 * The configs of the conformance table (conformance.fixture.ts): envoyproxy/ratelimit's example
 * config and the config files of its integration tests, plus a wildcard domain.
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
