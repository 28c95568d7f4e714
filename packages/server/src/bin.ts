#!/usr/bin/env node
import { type RunningServer, startServer } from './server.js';
/**
 * `sluice-server`: the rate limit service, configured by envoyproxy/ratelimit's environment
 * variables. A bad setting or config file exits with status 1 and a message naming it; SIGTERM
 * and SIGINT drain the calls in flight, then exit 0.
 */
import { readSettings } from './settings.js';

async function main(): Promise<void> {
  let running: RunningServer;
  try {
    running = await startServer(readSettings());
  } catch (error) {
    console.error(`sluice-server: cannot start: ${(error as Error).message}`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`sluice-server: ${signal}: draining calls in flight`);
    running.close().then(
      () => {
        console.log('sluice-server: stopped');
        process.exit(0);
      },
      (error: unknown) => {
        console.error(`sluice-server: error while stopping: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

void main();
