/**
 * `envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas` on @grpc/grpc-js:
 * each stream's reports answered in order; a malformed report ends that stream alone with
 * INVALID_ARGUMENT; a stream that ends leaves its buckets.
 */
import { type handleBidiStreamingCall, type ServerDuplexStream, status } from '@grpc/grpc-js';
import { QUOTA_CLIENT_METADATA, type QuotaService, type QuotaStream } from './quota-service.js';
import { RlqsReportError, type RlqsReports, type RlqsResponse } from './rlqs-types.js';

type QuotaCall = ServerDuplexStream<RlqsReports, RlqsResponse>;

/** The streams being served, so a shutdown can end them (long-lived streams would hold a drain). */
export class QuotaStreams {
  private readonly calls = new Set<QuotaCall>();

  constructor(private readonly service: QuotaService) {}

  /** The handler of `StreamRateLimitQuotas`. */
  handler(): handleBidiStreamingCall<RlqsReports, RlqsResponse> {
    return (call) => this.serve(call);
  }

  /** Ends every stream with OK: clients keep their assignments until their TTL and reconnect. */
  endAll(): void {
    for (const call of this.calls) call.end();
    this.calls.clear();
  }

  private serve(call: QuotaCall): void {
    const named = call.metadata.get(QUOTA_CLIENT_METADATA)[0];
    let stream: QuotaStream;
    try {
      stream = this.service.openStream(typeof named === 'string' ? named : undefined);
    } catch (error) {
      call.emit('error', { code: status.INVALID_ARGUMENT, details: (error as Error).message });
      return;
    }
    this.calls.add(call);
    const served = new ServedStream(call, stream, () => this.calls.delete(call));
    call.on('data', (reports: RlqsReports) => served.receive(reports));
    call.on('end', () => served.finish(true));
    call.on('cancelled', () => served.finish(false));
    call.on('error', () => served.finish(false));
  }
}

/** One stream's reports, answered one after another. */
class ServedStream {
  private queue: Promise<void> = Promise.resolve();
  private ended = false;

  constructor(
    private readonly call: QuotaCall,
    private readonly stream: QuotaStream,
    private readonly onEnd: () => void,
  ) {}

  receive(reports: RlqsReports): void {
    this.queue = this.queue.then(() => this.answer(reports));
  }

  private async answer(reports: RlqsReports): Promise<void> {
    if (this.ended) return;
    try {
      const response = await this.stream.answer(reports);
      if (!this.ended && response.bucket_action.length > 0) this.call.write(response);
    } catch (error) {
      const code = error instanceof RlqsReportError ? status.INVALID_ARGUMENT : status.INTERNAL;
      this.finish(false);
      this.call.emit('error', { code, details: (error as Error).message });
    }
  }

  /** The stream ended (by the client, a cancel, an error): its buckets are left once. */
  finish(endCall: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
    this.queue = this.queue.then(() => this.stream.close());
    if (endCall) this.call.end();
  }
}
