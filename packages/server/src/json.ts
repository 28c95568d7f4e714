/**
 * The proto3 JSON mapping of RateLimitRequest and RateLimitResponse, as envoyproxy/ratelimit's
 * `POST /json` reads and writes it (protojson): lowerCamelCase names out, either spelling in,
 * enums by name, durations as `"1.500s"`, default values left out.
 */
import type {
  RlsDescriptor,
  RlsDescriptorStatus,
  RlsDuration,
  RlsRequest,
  RlsResponse,
} from './rls-types.js';
import { RlsRequestError } from './rls-types.js';

type Json = Record<string, unknown>;

function field(source: Json, camel: string, snake: string): unknown {
  return source[camel] ?? source[snake];
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readUint(value: unknown, name: string): number {
  if (value === undefined || value === null) return 0;
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new RlsRequestError(`${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return n;
}

function readDescriptor(raw: unknown, i: number): RlsDescriptor {
  if (!isObject(raw)) throw new RlsRequestError(`descriptors[${i}] must be an object`);
  const entries = raw.entries;
  if (!Array.isArray(entries)) throw new RlsRequestError(`descriptors[${i}].entries must be a list`);
  const limit = raw.limit;
  const hits = field(raw, 'hitsAddend', 'hits_addend');
  return {
    entries: entries.map((entry: unknown, j) => {
      if (!isObject(entry)) throw new RlsRequestError(`descriptors[${i}].entries[${j}] must be an object`);
      return { key: String(entry.key ?? ''), value: String(entry.value ?? '') };
    }),
    limit: isObject(limit)
      ? {
          requests_per_unit: readUint(
            field(limit, 'requestsPerUnit', 'requests_per_unit'),
            'requestsPerUnit',
          ),
          unit: String(limit.unit ?? 'UNKNOWN'),
        }
      : null,
    // protojson writes a UInt64Value as the bare number (or string).
    hits_addend:
      hits === undefined || hits === null
        ? null
        : { value: readUint(isObject(hits) ? hits.value : hits, 'hitsAddend') },
  };
}

/** Parses a `POST /json` body. Throws `RlsRequestError` (answered 400) for anything malformed. */
export function requestFromJson(text: string): RlsRequest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new RlsRequestError('the body is not JSON');
  }
  if (!isObject(raw)) throw new RlsRequestError('the body must be a JSON object');
  const descriptors = raw.descriptors ?? [];
  if (!Array.isArray(descriptors)) throw new RlsRequestError('descriptors must be a list');
  return {
    domain: String(raw.domain ?? ''),
    descriptors: descriptors.map(readDescriptor),
    hits_addend: readUint(field(raw, 'hitsAddend', 'hits_addend'), 'hitsAddend'),
  };
}

/** A Duration as protojson writes it: `"42s"`, `"0.500s"`. */
export function durationJson(d: RlsDuration): string {
  if (d.nanos === 0) return `${d.seconds}s`;
  return `${d.seconds}.${String(d.nanos)
    .padStart(9, '0')
    .replace(/(\d{3})0{6}$/, '$1')}s`;
}

function statusJson(s: RlsDescriptorStatus): Json {
  const out: Json = {};
  if (s.code !== 'UNKNOWN') out.code = s.code;
  if (s.current_limit !== null) {
    const limit: Json = {};
    if (s.current_limit.name !== '') limit.name = s.current_limit.name;
    if (s.current_limit.requests_per_unit !== 0) limit.requestsPerUnit = s.current_limit.requests_per_unit;
    if (s.current_limit.unit !== 'UNKNOWN') limit.unit = s.current_limit.unit;
    out.currentLimit = limit;
  }
  if (s.limit_remaining !== 0) out.limitRemaining = s.limit_remaining;
  if (s.duration_until_reset !== null) out.durationUntilReset = durationJson(s.duration_until_reset);
  return out;
}

/** A RateLimitResponse as protojson writes it. */
export function responseToJson(response: RlsResponse): Json {
  const out: Json = { overallCode: response.overall_code };
  if (response.statuses.length > 0) out.statuses = response.statuses.map(statusJson);
  if (response.response_headers_to_add.length > 0)
    out.responseHeadersToAdd = response.response_headers_to_add;
  if (response.raw_body.length > 0) out.rawBody = Buffer.from(response.raw_body).toString('base64');
  return out;
}
