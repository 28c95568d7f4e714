/**
 * The check that turns an unknown option name into an error that names the Sluice option
 * meant: another library's option (`max`, `windowMs`, `keyGenerator`, `points`...) or a typo
 * (`polices`). The names each surface takes come from the option schema (`optionNames`).
 */
import { RateLimitOptionsError } from './options-error.js';

/**
 * Options of other rate-limit libraries (express-rate-limit, hono-rate-limiter,
 * @nestjs/throttler, koa-ratelimit, rate-limiter-flexible, @upstash/ratelimit,
 * @fastify/rate-limit) and what to write in Sluice instead.
 */
export const FOREIGN_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  max: 'did you mean "limit"? (requests per "window")',
  windowMs: 'did you mean "window"? (milliseconds or \'15m\')',
  keyGenerator: 'did you mean "identity"? (a function of the request returning a string)',
  message: 'did you mean "onLimited"? (the default answer is a problem+json 429)',
  statusCode: 'did you mean "onLimited"? (denials answer 429, store failures 503)',
  handler: 'did you mean "onLimited"?',
  standardHeaders: "did you mean \"headers\"? ('draft-10', 'draft-7', 'draft-6', 'legacy' or false)",
  legacyHeaders: 'did you mean "headers"? (headers: \'legacy\' sends X-RateLimit-*)',
  requestPropertyName: "the decision is always at req.rateLimit (ctx.state.rateLimit, c.get('rateLimit'))",
  ttl: 'did you mean "window"? (milliseconds or \'1m\')',
  throttlers: 'did you mean "policies"? (one policy object per throttler)',
  points: 'did you mean "limit"? (units per "window")',
  duration: "did you mean \"window\"? (rate-limiter-flexible's seconds: window: '60s')",
  blockDuration: "did you mean a policy's \"ban\"? (policies: [{ ..., ban: { blockMs: '1m' } }])",
  ban: "is a policy field: policies: [{ ..., ban: { blockMs: '1m' } }]",
  blockList: 'did you mean "denyList"?',
  denylist: 'did you mean "denyList"?',
  blacklist: 'did you mean "denyList"?',
  keyPrefix: 'did you mean "prefix"?',
  storeClient: 'did you mean "store"? (new RedisStore({ client }))',
  db: 'did you mean "store"? (Koa: store: new RedisStore({ client }))',
  id: 'did you mean "identity"? (a function of the context returning a string)',
  errorMessage: 'did you mean "onLimited"?',
  whitelist: 'did you mean "allowList" (client IPs) or "skip" (a function)?',
  allowlist: 'did you mean "allowList"?',
  driver: 'did you mean "store"? (a MemoryStore by default, new RedisStore({ client }) for Redis)',
  redis: 'did you mean "store"? (store: new RedisStore({ client: redis }))',
  ephemeralCache: 'did you mean "denyCache"? (on by default)',
  timeWindow: 'did you mean "window"? (milliseconds or \'1m\')',
  skipOnError:
    'did you mean "failMode"? (\'open\' lets requests through when the store fails; every call has a deadline)',
  nameSpace: 'did you mean "prefix"?',
  errorResponseBuilder: 'did you mean "onLimited"?',
  addHeaders: "did you mean \"headers\"? ('draft-10', 'draft-7', 'draft-6', 'legacy' or false)",
  addHeadersOnExceeding: "did you mean \"headers\"? ('draft-10', 'draft-7', 'draft-6', 'legacy' or false)",
  enableDraftSpec: 'did you mean "headers"? (\'draft-10\' is the default)',
  groupId:
    "did you mean a policy with scope: 'identity'? (one budget across routes; or register the plugin inside the group's plugin)",
  continueExceeding: "did you mean a policy's \"ban\"? (policies: [{ ..., ban: { blockMs: '1m' } }])",
  exponentialBackoff: 'did you mean a policy\'s "ban" with "escalation"?',
  cache: 'did you mean "denyCache"? (on by default)',
});

/** Levenshtein distance, bounded: returns `max + 1` as soon as it exceeds `max`. */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const value = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
      current.push(value);
      if (value < best) best = value;
    }
    if (best > max) return max + 1;
    previous = current;
  }
  return previous[b.length] as number;
}

/** The name in `known` closest to `name` (at most two edits, case aside), or `undefined`. */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = distance(lower, candidate.toLowerCase(), 2);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * What to say about an option name that is not in `known`: the Sluice option another
 * library's name maps to, or the closest known name for a typo.
 */
export function unknownOptionHint(name: string, known: readonly string[]): string {
  const foreign = Object.hasOwn(FOREIGN_OPTIONS, name) ? FOREIGN_OPTIONS[name] : undefined;
  if (foreign !== undefined) return foreign;
  const best = closestName(name, known);
  return best === undefined ? `options are ${known.join(', ')}` : `did you mean "${best}"?`;
}

/**
 * Throws for the first option name not in `known` (set to anything but `undefined`):
 * `rateLimit: "max" is not an option of express rateLimit(): did you mean "limit"? ...`.
 *
 * @param options the options as given
 * @param known every option name the caller takes
 * @param where what takes them, e.g. `express rateLimit()`
 * @param source the message prefix, e.g. `rateLimit`
 */
export function checkOptionNames(
  options: Readonly<Record<string, unknown>>,
  known: readonly string[],
  where: string,
  source?: string,
): void {
  for (const key of Object.keys(options)) {
    if (known.includes(key) || options[key] === undefined) continue;
    throw new RateLimitOptionsError(
      key,
      options[key],
      `is not an option of ${where}: ${unknownOptionHint(key, known)}`,
      source,
    );
  }
}
