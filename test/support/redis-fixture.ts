/**
 * A private redis-server for one test file, with two ioredis connections: `client` for the code
 * under test and `admin` for the test's own reads (INFO, FLUSHALL). Registers beforeAll/afterAll.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { type RedisProcess, startRedis } from './redis-server.js';

export interface RedisFixture {
  readonly server: RedisProcess;
  readonly client: Redis;
  readonly admin: Redis;
}

/** Starts the server before the file's tests and stops it (by PID) after them. */
export function useRedis(): RedisFixture {
  let server: RedisProcess | undefined;
  let client: Redis | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
    admin = new Redis(server.port, '127.0.0.1');
  });
  afterAll(async () => {
    client?.disconnect();
    admin?.disconnect();
    await server?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useRedis: the server starts in beforeAll');
    return value;
  };
  return {
    get server() {
      return started(server);
    },
    get client() {
      return started(client);
    },
    get admin() {
      return started(admin);
    },
  };
}
