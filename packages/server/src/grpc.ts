/**
 * The gRPC side: `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and the standard
 * `grpc.health.v1.Health` service, on @grpc/grpc-js.
 */
import {
  type handleServerStreamingCall,
  type handleUnaryCall,
  Server,
  ServerCredentials,
  type ServerWritableStream,
  status,
} from '@grpc/grpc-js';
import { drainWithin } from './drain.js';
import { healthServiceDefinition, rateLimitServiceDefinition } from './protos.js';
import {
  type RlsRequest,
  RlsRequestError,
  type RlsResponse,
  RlsTooLargeError,
  RlsUnavailableError,
} from './rls-types.js';
import type { RateLimitService } from './service.js';

/** `grpc.health.v1.HealthCheckResponse.ServingStatus`. */
type ServingStatus = 'SERVING' | 'NOT_SERVING';

/** Answers the health service from a function of the moment. */
export class HealthState {
  private readonly watchers = new Set<ServerWritableStream<unknown, { status: ServingStatus }>>();
  private last: ServingStatus | undefined;

  constructor(private readonly serving: () => boolean) {}

  /** The status now. */
  status(): ServingStatus {
    return this.serving() ? 'SERVING' : 'NOT_SERVING';
  }

  /** Tells watchers when the status changed since the last call. */
  refresh(): void {
    const now = this.status();
    if (now === this.last) return;
    this.last = now;
    for (const call of this.watchers) call.write({ status: now });
  }

  /** Adds a Watch stream; it ends when the client cancels or the drain is over. */
  watch(call: ServerWritableStream<unknown, { status: ServingStatus }>): void {
    this.watchers.add(call);
    call.write({ status: this.status() });
    call.on('cancelled', () => this.watchers.delete(call));
  }

  /** Ends every Watch stream (shutdown). */
  endAll(): void {
    for (const call of this.watchers) call.end();
    this.watchers.clear();
  }
}

function grpcCode(error: unknown): status {
  if (error instanceof RlsTooLargeError) return status.RESOURCE_EXHAUSTED;
  if (error instanceof RlsRequestError) return status.INVALID_ARGUMENT;
  if (error instanceof RlsUnavailableError) return status.UNAVAILABLE;
  return status.INTERNAL;
}

/** Counts the ShouldRateLimit calls in flight, so a drain knows when they are all answered. */
class CallsInFlight {
  private count = 0;
  private waiters: (() => void)[] = [];

  start(): void {
    this.count += 1;
  }

  end(): void {
    this.count -= 1;
    if (this.count === 0) for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves once no call is in flight. */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

function shouldRateLimitHandler(
  service: RateLimitService,
  calls: CallsInFlight,
): handleUnaryCall<RlsRequest, RlsResponse> {
  return (call, callback) => {
    calls.start();
    service
      .shouldRateLimit(call.request)
      .then(
        (response) => callback(null, response),
        (error: unknown) => callback({ code: grpcCode(error), details: (error as Error).message }),
      )
      .finally(() => calls.end());
  };
}

/** The service's gRPC server: both services, and what a drain needs to know. */
export class RlsGrpcServer extends Server {
  /** The ShouldRateLimit calls in flight. */
  readonly calls = new CallsInFlight();

  constructor(readonly health: HealthState) {
    super({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  }
}

/** A gRPC server with both services, not yet bound. */
export function createGrpcServer(service: RateLimitService, health: HealthState): RlsGrpcServer {
  const server = new RlsGrpcServer(health);
  server.addService(rateLimitServiceDefinition(), {
    ShouldRateLimit: shouldRateLimitHandler(service, server.calls),
  });
  const check: handleUnaryCall<{ service: string }, { status: ServingStatus }> = (call, callback) => {
    const name = call.request.service;
    if (name !== '' && name !== 'ratelimit' && name !== 'envoy.service.ratelimit.v3.RateLimitService') {
      callback({ code: status.NOT_FOUND, details: `unknown service ${JSON.stringify(name)}` });
      return;
    }
    callback(null, { status: health.status() });
  };
  const watch: handleServerStreamingCall<{ service: string }, { status: ServingStatus }> = (call) =>
    health.watch(call);
  server.addService(healthServiceDefinition(), { Check: check, Watch: watch });
  return server;
}

/** Binds `server` on `host:port` (0: a free port) and resolves with the port. */
export function bindGrpc(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, ServerCredentials.createInsecure(), (error, bound) => {
      if (error) reject(error);
      else resolve(bound);
    });
  });
}

/**
 * Stops taking calls and resolves once the calls in flight are answered (or `graceMs` passed).
 * Health Watch streams stay open through the drain (they were told NOT_SERVING when it began) and
 * end once the ShouldRateLimit calls in flight are answered, so they neither end early nor hold
 * the drain to its bound.
 */
export function drainGrpc(server: RlsGrpcServer, graceMs: number): Promise<void> {
  return drainWithin(
    graceMs,
    (done) => {
      server.tryShutdown(done);
      void server.calls.idle().then(() => server.health.endAll());
    },
    () => server.forceShutdown(),
  );
}
