/**
 * `deferContentType`: the problem+json content type of a denial on an Express response,
 * set when the body is written rather than before the exception layer runs.
 *
 * Nest's ExpressAdapter checks the content type of an error reply before it serializes the
 * body, and Nest 11 replaces any type that does not start with `application/json` by
 * `application/json`, logging `Content-Type doesn't match Reply body` each time (Nest 10
 * and 12 accept `application/problem+json`; the Fastify adapters of 10, 11 and 12 too).
 * With the type left unset until `res.json()` writes exactly the verdict's body, every
 * version sends `application/problem+json` without a warning, and an exception filter that
 * answers with a body of its own keeps the content type it chooses.
 */

/** The part of an Express response this needs. */
export interface JsonResponse {
  json(body: unknown): unknown;
  getHeader(name: string): unknown;
  setHeader(name: string, value: string): unknown;
}

/** True for a response that serializes JSON bodies itself (Express), not a Fastify reply. */
export function isJsonResponse(response: unknown): response is JsonResponse {
  const candidate = response as Partial<JsonResponse> | undefined;
  return (
    typeof candidate?.json === 'function' &&
    typeof candidate.getHeader === 'function' &&
    typeof candidate.setHeader === 'function'
  );
}

/**
 * Makes the next `response.json(body)` call with this very `body` set `Content-Type` to
 * `contentType` first, unless a content type is set by then. Applies once; any other body
 * is written as it would have been.
 */
export function deferContentType(response: JsonResponse, body: object, contentType: string): void {
  const own = Object.hasOwn(response, 'json');
  const json = response.json;
  response.json = function jsonWithContentType(this: JsonResponse, value: unknown) {
    if (own) response.json = json;
    else delete (response as Partial<JsonResponse>).json;
    if (value === body && response.getHeader('Content-Type') === undefined) {
      response.setHeader('Content-Type', contentType);
    }
    return json.call(this, value);
  };
}
