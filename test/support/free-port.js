/**
 * Loopback ports for every test, the demo and the benchmarks: a free one, or whether one is free.
 * Plain ESM (types in free-port.d.ts) so that Node scripts (.mjs) and TypeScript tests import the
 * same module.
 */
import { createServer } from 'node:net';

/** A port that was free on 127.0.0.1 a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** True when `port` on 127.0.0.1 can be listened on now. */
export function canListen(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
