/** What every example app takes from its environment: the port and the options of its limiter. */
import type { DenyListEntries, Store } from '@sluice/core';
import { denyListFromEnv } from './deny-list.js';
import { storeFromEnv } from './store.js';
import { timeoutMsFromEnv } from './timeout.js';

/** Options of every example app's `createApp` (Nest: `AppModule.register`). */
export interface ExampleAppOptions {
  /** Where limiter state lives; the memory store when unset. */
  readonly store?: Store;
  /** Key prefix; `'sluice'` when unset. */
  readonly prefix?: string;
  /** Deadline for every store call in milliseconds; core's default (100) when unset. */
  readonly timeoutMs?: number;
  /** Client IPs and API keys answered 403 on every limited route (`SLUICE_DENY_LIST`); none when unset. */
  readonly denyList?: DenyListEntries;
}

/** The environment of an example app, read and checked. */
export interface AppEnv {
  /** `PORT` (default 3000; 0: any free port). */
  readonly port: number;
  /** Which store the options use, for the ready line (`memory`, `redis`, `cluster`). */
  readonly description: string;
  /** The app's options: store, `SLUICE_PREFIX`, `SLUICE_TIMEOUT_MS`, `SLUICE_DENY_LIST`. */
  readonly options: ExampleAppOptions;
}

/**
 * `PORT`, `REDIS_URL` / `REDIS_CLUSTER_NODES`, `SLUICE_PREFIX`, `SLUICE_TIMEOUT_MS` and
 * `SLUICE_DENY_LIST`. Throws, naming the variable and the value, when one is not valid.
 */
export function appEnv(env: NodeJS.ProcessEnv): AppEnv {
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`PORT must be an integer between 0 and 65535, got ${env.PORT}`);
  }
  const timeoutMs = timeoutMsFromEnv(env);
  const { store, description } = storeFromEnv(env);
  const denyList = denyListFromEnv(env);
  const options: ExampleAppOptions = {
    store,
    prefix: env.SLUICE_PREFIX || undefined,
    timeoutMs,
    ...(denyList !== undefined && { denyList }),
  };
  return { port, description, options };
}
