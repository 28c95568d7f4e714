/**
 * The floor of a rate limit service: a grpc-js server on the same protos (and the same server
 * options) as sluice-server that answers every ShouldRateLimit OK, one OK status per descriptor,
 * without a store. Prints `listening on grpc <port>`; stops on SIGTERM.
 *
 *   node servers/rls-trivial.mjs
 */
import { loadPackageDefinition, Server, ServerCredentials } from '@grpc/grpc-js';
import { packageDefinition } from '@sluice/server';

const root = loadPackageDefinition(packageDefinition());
const { service } = root.envoy.service.ratelimit.v3.RateLimitService;
const server = new Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
server.addService(service, {
  ShouldRateLimit(call, callback) {
    const statuses = call.request.descriptors.map(() => ({ code: 'OK', limit_remaining: 0 }));
    callback(null, { overall_code: 'OK', statuses, response_headers_to_add: [], request_headers_to_add: [] });
  },
});
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  console.log(`listening on grpc ${port}`);
});
process.once('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
