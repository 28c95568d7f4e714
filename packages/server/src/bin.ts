#!/usr/bin/env node
/**
 * `sluice-server`: the rate limit service, configured by envoyproxy/ratelimit's environment
 * variables, in one process or as `SLUICE_WORKERS` worker processes (workers.ts). A bad setting or
 * config file exits with status 1 and a message naming it; SIGTERM and SIGINT drain the calls in
 * flight, then exit 0.
 */
import cluster from 'node:cluster';
import { readSettings, readWorkerCount, type ServerSettings } from './settings.js';
import { runPrimary, runWorker, serveProcess } from './workers.js';

let settings: ServerSettings;
let workers: number;
try {
  settings = readSettings();
  workers = readWorkerCount(settings);
} catch (error) {
  console.error(`sluice-server: cannot start: ${(error as Error).message}`);
  process.exit(1);
}
if (cluster.isWorker) void runWorker(settings);
else if (workers > 1) runPrimary(settings, workers);
else void serveProcess(settings);
