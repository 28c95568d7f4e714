/** What an adapter saw of a response, for settling the check made before it. */

/** How a request's response ended, as the adapter saw it. */
export interface ResponseFacts {
  /** The response status (the one set when the connection closed early). */
  readonly statusCode: number;
  /** True when the response was sent to the end; false when the connection closed before. */
  readonly completed: boolean;
}
