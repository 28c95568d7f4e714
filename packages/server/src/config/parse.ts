/**
 * envoyproxy/ratelimit's YAML config (src/config/config_impl.go) with the same meanings, plus
 * Sluice's own `rate_limit` keys (`algorithm`, `burst`, `fail_mode`). Every problem is a
 * `ConfigError` naming the file, the domain and the descriptor.
 */
import { type Algorithm, definePolicy } from '@sluice/core';
import { ALGORITHM_NAMES, holdsSlots } from '@sluice/core/adapter';
import { type Document, isScalar, LineCounter, parseAllDocuments, visit } from 'yaml';
import { ConfigError, type RateLimitConfig, type Rule, type RuleNode, UNIT_MS, type Unit } from './types.js';

/** One file to load: its name (for errors) and text. */
export interface ConfigFile {
  readonly name: string;
  readonly text: string;
}

const ROOT_KEYS = ['domain', 'descriptors'];
const DESCRIPTOR_KEYS = [
  'key',
  'value',
  'rate_limit',
  'descriptors',
  'shadow_mode',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
];
const RATE_LIMIT_KEYS = [
  'unit',
  'requests_per_unit',
  'unlimited',
  'name',
  'replaces',
  'algorithm',
  'burst',
  'fail_mode',
];
/** Keys envoyproxy/ratelimit reads that Sluice does not honour: refused rather than ignored. */
const REFUSED: Readonly<Record<string, string>> = {
  quota_mode: 'quota_mode is not supported by sluice-server',
  metadata: 'metadata (RESPONSE_DYNAMIC_METADATA) is not supported by sluice-server',
};
const FAIL_MODES = ['closed', 'open', 'local'] as const;
const MAX_UINT32 = 4_294_967_295;

type Where = { readonly file: string; readonly domain?: string; readonly descriptor?: string };

function problem(where: Where, text: string): ConfigError {
  return new ConfigError(where.file, where.domain, where.descriptor, text);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkKeys(where: Where, value: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(value)) {
    const refused = REFUSED[key];
    if (refused !== undefined) throw problem(where, refused);
    if (!allowed.includes(key)) throw problem(where, `unknown key '${key}'`);
  }
}

function readBool(where: Where, value: Record<string, unknown>, key: string): boolean {
  const raw = value[key];
  if (raw === undefined || raw === null) return false;
  if (typeof raw !== 'boolean')
    throw problem(where, `${key} must be true or false, got ${JSON.stringify(raw)}`);
  return raw;
}

function readString(where: Where, value: Record<string, unknown>, key: string): string {
  const raw = value[key];
  if (raw === undefined || raw === null) return '';
  if (typeof raw === 'number' || typeof raw === 'boolean') return String(raw);
  if (typeof raw !== 'string') throw problem(where, `${key} must be a string, got ${JSON.stringify(raw)}`);
  return raw;
}

function readList(where: Where, value: Record<string, unknown>, key: string): Record<string, unknown>[] {
  const raw = value[key];
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw) || !raw.every(isRecord)) throw problem(where, `${key} must be a list of maps`);
  return raw;
}

function readUnit(where: Where, raw: unknown): Unit | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  const upper = typeof raw === 'string' ? raw.toUpperCase() : '';
  if (upper in UNIT_MS) return upper as Unit;
  throw problem(where, `invalid rate limit unit '${String(raw)}'`);
}

function readRequestsPerUnit(where: Where, raw: unknown): number {
  if (raw === undefined || raw === null) return 0;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > MAX_UINT32) {
    throw problem(
      where,
      `requests_per_unit must be an integer from 0 to ${MAX_UINT32}, got ${JSON.stringify(raw)}`,
    );
  }
  return raw;
}

function readFailMode(where: Where, raw: unknown): Rule['failMode'] {
  if (raw === undefined || raw === null) return 'closed';
  if (FAIL_MODES.includes(raw as Rule['failMode'])) return raw as Rule['failMode'];
  throw problem(where, `fail_mode must be one of ${FAIL_MODES.join(', ')}, got ${JSON.stringify(raw)}`);
}

/**
 * The algorithms a rule may use: every rate algorithm. A concurrency policy holds a slot until its
 * request ends, and Envoy's protocol has no call to release one.
 */
const RULE_ALGORITHMS: readonly Algorithm[] = ALGORITHM_NAMES.filter(
  (name) => !holdsSlots({ algorithm: name }),
);

function readAlgorithm(where: Where, raw: unknown): Algorithm {
  if (raw === undefined || raw === null) return 'fixed-window';
  if (RULE_ALGORITHMS.includes(raw as Algorithm)) return raw as Algorithm;
  const why = holdsSlots({ algorithm: String(raw) })
    ? ' (a concurrency policy needs a release when the request ends, which the rate limit protocol has no call for)'
    : '';
  throw problem(
    where,
    `algorithm must be one of ${RULE_ALGORITHMS.join(', ')}, got ${JSON.stringify(raw)}${why}`,
  );
}

function readReplaces(where: Where, limit: Record<string, unknown>, name: string): string[] {
  return readList(where, limit, 'replaces').map((entry) => {
    checkKeys(where, entry, ['name']);
    const replaced = readString(where, entry, 'name');
    if (replaced === '') throw problem(where, 'should not have an empty replaces entry');
    if (replaced === name) throw problem(where, 'replaces should not contain name of same descriptor');
    return replaced;
  });
}

/** Compiles one `rate_limit` map. `counter` numbers the rules of the whole config. */
function readRule(where: Where, id: string, raw: unknown, shadow: boolean, counter: number): Rule {
  if (!isRecord(raw)) throw problem(where, 'rate_limit must be a map');
  checkKeys(where, raw, RATE_LIMIT_KEYS);
  const unlimited = readBool(where, raw, 'unlimited');
  const unit = readUnit(where, raw.unit);
  if (unlimited && unit !== undefined)
    throw problem(where, 'should not specify rate limit unit when unlimited');
  if (!unlimited && unit === undefined)
    throw problem(where, `invalid rate limit unit '${String(raw.unit ?? '')}'`);
  const requestsPerUnit = readRequestsPerUnit(where, raw.requests_per_unit);
  const name = readString(where, raw, 'name');
  const replaces = readReplaces(where, raw, name);
  const failMode = readFailMode(where, raw.fail_mode);
  const algorithm = readAlgorithm(where, raw.algorithm);
  const burst = raw.burst;
  if (burst !== undefined && (unlimited || requestsPerUnit === 0)) {
    throw problem(where, 'burst needs a rate limit with requests_per_unit above 0');
  }
  let policy: Rule['policy'];
  if (!unlimited && unit !== undefined && requestsPerUnit > 0) {
    try {
      policy = definePolicy({
        name: `rule-${counter}`,
        algorithm,
        limit: requestsPerUnit,
        window: UNIT_MS[unit],
        ...(burst === undefined ? {} : { burst: burst as number }),
        failMode,
        shadow,
      });
    } catch (error) {
      throw problem(where, (error as Error).message.replace(/^policy "rule-\d+": /, ''));
    }
  }
  return {
    id,
    domain: where.domain ?? '',
    name,
    replaces,
    unlimited,
    shadow,
    requestsPerUnit,
    unit,
    policy,
    failMode,
  };
}

function newNode(rule: Rule | undefined, shareThreshold: boolean): RuleNode {
  return { children: new Map(), wildcards: [], rule, shareThreshold };
}

/** Loads the `descriptors` list below `parent` (the reference's loadDescriptors). */
function loadDescriptors(
  file: string,
  domain: string,
  parentPath: string,
  parent: RuleNode,
  list: readonly Record<string, unknown>[],
  rules: Rule[],
): void {
  for (const item of list) {
    const key = readString({ file, domain, descriptor: parentPath || undefined }, item, 'key');
    const value = readString({ file, domain, descriptor: parentPath || undefined }, item, 'value');
    const finalKey = value === '' ? key : `${key}_${value}`;
    const path = parentPath === '' ? finalKey : `${parentPath}.${finalKey}`;
    const where: Where = { file, domain, descriptor: path };
    if (key === '')
      throw problem({ file, domain, descriptor: parentPath || undefined }, 'descriptor has empty key');
    checkKeys(where, item, DESCRIPTOR_KEYS);
    if (parent.children.has(finalKey))
      throw problem(where, `duplicate descriptor composite key '${domain}.${path}'`);
    const shadow = readBool(where, item, 'shadow_mode');
    readBool(where, item, 'detailed_metric');
    readBool(where, item, 'value_to_metric');
    const shareThreshold = readBool(where, item, 'share_threshold');
    if (shareThreshold && !finalKey.includes('*')) {
      throw problem(
        where,
        `share_threshold can only be used with wildcard values (containing '*'), but found key '${finalKey}'`,
      );
    }
    let rule: Rule | undefined;
    if (item.rate_limit !== undefined && item.rate_limit !== null) {
      rule = readRule(where, path, item.rate_limit, shadow, rules.length);
      rules.push(rule);
    }
    const node = newNode(rule, shareThreshold);
    if (finalKey.includes('*')) parent.wildcards.push({ key: finalKey, parts: finalKey.split('*') });
    loadDescriptors(file, domain, path, node, readList(where, item, 'descriptors'), rules);
    parent.children.set(finalKey, node);
  }
}

/**
 * The keys whose values are strings in the reference's structs: yaml.v2 decodes any scalar there
 * as its text (`value: 01234` is "01234", not 668; `1.10` stays "1.10").
 */
const STRING_FIELDS: ReadonlySet<string> = new Set([
  'domain',
  'key',
  'value',
  'name',
  'unit',
  'algorithm',
  'fail_mode',
]);

/** Turns every non-null scalar under a string field into its text, as yaml.v2 decodes it. */
function keepStringText(document: Document): void {
  visit(document, {
    Pair(_, pair) {
      const { key, value } = pair;
      if (!isScalar(key) || !isScalar(value) || !STRING_FIELDS.has(String(key.value))) return;
      if (value.value !== null && typeof value.value !== 'string' && value.source !== undefined)
        value.value = value.source;
    },
  });
}

/**
 * Parses one file's YAML into its root map as the reference reads it (gopkg.in/yaml.v2): YAML 1.1
 * (`yes`/`no` booleans, `1_000`, octal `0755`), merge keys (`<<`), string fields as written, and of
 * several documents the first. A syntax error names the file and the line.
 */
function readRoot(file: ConfigFile): Record<string, unknown> {
  const lines = new LineCounter();
  const documents = parseAllDocuments(file.text, {
    version: '1.1',
    merge: true,
    uniqueKeys: true,
    prettyErrors: false,
    lineCounter: lines,
  });
  const document = documents[0];
  const first = 'empty' in documents ? documents.errors[0] : document?.errors[0];
  if (first !== undefined) {
    const { line, col } = lines.linePos(first.pos[0]);
    throw new ConfigError(
      file.name,
      undefined,
      undefined,
      `error loading config file: line ${line}, column ${col}: ${first.message}`,
    );
  }
  if (document !== undefined) keepStringText(document);
  const root: unknown = document?.toJS() ?? null;
  if (!isRecord(root))
    throw new ConfigError(
      file.name,
      undefined,
      undefined,
      'config file must be a map with domain and descriptors',
    );
  return root;
}

/**
 * Builds a config from files. Throws `ConfigError` on the first problem: YAML errors, unknown keys,
 * an unknown unit, a duplicate domain or descriptor, a value out of range.
 */
export function parseConfig(files: readonly ConfigFile[]): RateLimitConfig {
  const domains = new Map<string, RuleNode>();
  const rules: Rule[] = [];
  for (const file of files) {
    const root = readRoot(file);
    checkKeys({ file: file.name }, root, ROOT_KEYS);
    const domain = readString({ file: file.name }, root, 'domain');
    if (domain === '')
      throw new ConfigError(file.name, undefined, undefined, 'config file cannot have empty domain');
    if (domains.has(domain))
      throw new ConfigError(file.name, domain, undefined, `duplicate domain '${domain}' in config file`);
    const node = newNode(undefined, false);
    loadDescriptors(
      file.name,
      domain,
      '',
      node,
      readList({ file: file.name, domain }, root, 'descriptors'),
      rules,
    );
    domains.set(domain, node);
  }
  return { domains, rules, files: files.map((file) => file.name) };
}
