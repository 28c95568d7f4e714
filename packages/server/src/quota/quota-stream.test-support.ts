/**
 * Test support: a raw `StreamRateLimitQuotas` stream from a real gRPC client, driven report by
 * report (the test states each report's counts and elapsed time), and the shares it is told.
 */
import type { ServiceError } from '@grpc/grpc-js';
import { openQuotaStream, quotaServiceClient } from './quota-client.js';
import type { RlqsReports, RlqsResponse } from './rlqs-types.js';

/** A stream the test drives. */
export interface RawQuotaStream {
  /** Sends a report and resolves with the response to it. */
  report(reports: Partial<RlqsReports>): Promise<RlqsResponse>;
  /** Sends a report of one bucket: `requests` over `elapsedMs`; resolves with its share (-1 for DENY_ALL). */
  demand(bucket: Record<string, string>, requests: number, elapsedMs?: number): Promise<number>;
  /** The status the stream ended with, once it ended with an error. */
  readonly failed: Promise<ServiceError>;
  /** Ends the stream from the client side. */
  end(): void;
  close(): void;
}

/** The share of a bucket action (token bucket's max_tokens; 0 for DENY_ALL; -1 for ALLOW_ALL; NaN for abandon). */
export function shareOf(response: RlqsResponse, index = 0): number {
  const action = response.bucket_action[index] as Record<string, unknown> | undefined;
  const assignment = action?.quota_assignment_action as
    | { rate_limit_strategy: { token_bucket?: { max_tokens: number }; blanket_rule?: string } }
    | null
    | undefined;
  if (assignment == null) return Number.NaN;
  const strategy = assignment.rate_limit_strategy;
  if (strategy.token_bucket != null) return strategy.token_bucket.max_tokens;
  return strategy.blanket_rule === 'DENY_ALL' ? 0 : -1;
}

/** Opens a stream on 127.0.0.1:`port` for `domain`, named `clientId` when given. */
export function rawQuotaStream(port: number, domain: string, clientId?: string): RawQuotaStream {
  const client = quotaServiceClient(`127.0.0.1:${port}`);
  const stream = openQuotaStream(client, clientId);
  const waiting: ((r: RlqsResponse) => void)[] = [];
  stream.on('data', (response: RlqsResponse) => waiting.shift()?.(response));
  const failed = new Promise<ServiceError>((resolve) => stream.on('error', resolve));
  const report = (reports: Partial<RlqsReports>): Promise<RlqsResponse> =>
    new Promise((resolve, reject) => {
      waiting.push(resolve);
      void failed.then(reject);
      stream.write({ domain, ...reports } as RlqsReports);
    });
  return {
    report,
    demand: async (bucket, requests, elapsedMs = 1000) =>
      shareOf(
        await report({
          bucket_quota_usages: [
            {
              bucket_id: { bucket },
              time_elapsed: {
                seconds: String(Math.floor(elapsedMs / 1000)),
                nanos: (elapsedMs % 1000) * 1e6,
              },
              num_requests_allowed: String(requests),
              num_requests_denied: '0',
            },
          ],
        }),
      ),
    failed,
    end: () => stream.end(),
    close: () => {
      stream.cancel();
      client.close();
    },
  };
}
