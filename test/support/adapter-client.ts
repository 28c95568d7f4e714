/** A small HTTP client for the adapter tests: fetch to 127.0.0.1, the whole reply read. */

/** One response, read in full. */
export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
}

/** Sends one request and reads the whole response. */
export async function request(
  url: string,
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return readReply(await fetch(url, { method: init.method ?? 'GET', headers: init.headers }));
}

/** Reads a whole response (from fetch, or from an in-process `app.request()`). */
export async function readReply(response: Response): Promise<Reply> {
  const text = await response.text();
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, text };
}

/** Parses a JSON body, with the body in the error when it is not JSON. */
export function json(reply: Reply): unknown {
  try {
    return JSON.parse(reply.text);
  } catch {
    throw new Error(`answered ${reply.status} with a body that is not JSON: ${reply.text}`);
  }
}

/** The bodies design.md specifies, written out literally, shared with the integration suites. */
export { EXPECTED } from './expected.js';
