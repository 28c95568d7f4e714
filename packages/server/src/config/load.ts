/**
 * Reads the config folder (`*.yaml` and `*.yml`, dot files skipped, in name order) and watches it:
 * a change reloads the whole folder; a bad file keeps the previous config in force.
 */
import { type FSWatcher, readdirSync, readFileSync, watch } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from './parse.js';
import { ConfigError, type RateLimitConfig } from './types.js';

/** Loads every config file of `dir`. Throws `ConfigError` naming the file on the first problem. */
export function loadConfigDir(dir: string): RateLimitConfig {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((name) => !name.startsWith('.') && /\.ya?ml$/.test(name))
      .sort();
  } catch (error) {
    throw new ConfigError(
      dir,
      undefined,
      undefined,
      `cannot read the config folder (${(error as Error).message})`,
    );
  }
  const files = names.map((name) => {
    const path = join(dir, name);
    try {
      return { name: path, text: readFileSync(path, 'utf8') };
    } catch (error) {
      throw new ConfigError(path, undefined, undefined, `cannot read the file (${(error as Error).message})`);
    }
  });
  return parseConfig(files);
}

/** What a config watcher reports. */
export interface ConfigWatchEvents {
  readonly onLoad: (config: RateLimitConfig) => void;
  readonly onError: (error: ConfigError) => void;
}

/** How a watcher is set up. */
export interface ConfigWatchOptions {
  readonly configDir: string;
  readonly runtimeRoot: string;
  /** `RUNTIME_WATCH_ROOT`: watch the runtime root recursively (true) or the config folder (false). */
  readonly watchRoot: boolean;
  /** Milliseconds a burst of file events is gathered before one reload (default 100). */
  readonly debounceMs?: number;
}

/** A running watcher. */
export interface ConfigWatcher {
  close(): void;
}

/**
 * Watches the config and reloads it after changes settle: `onLoad` with the new config, or
 * `onError` with the problem (the caller keeps the previous config).
 */
export function watchConfig(options: ConfigWatchOptions, events: ConfigWatchEvents): ConfigWatcher {
  const debounceMs = options.debounceMs ?? 100;
  let timer: NodeJS.Timeout | undefined;
  const reload = (): void => {
    timer = undefined;
    try {
      events.onLoad(loadConfigDir(options.configDir));
    } catch (error) {
      if (error instanceof ConfigError) events.onError(error);
      else events.onError(new ConfigError(options.configDir, undefined, undefined, String(error)));
    }
  };
  const schedule = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(reload, debounceMs);
  };
  const watcher: FSWatcher = options.watchRoot
    ? watch(options.runtimeRoot, { recursive: true, persistent: false }, schedule)
    : watch(options.configDir, { persistent: false }, schedule);
  watcher.on('error', () => {});
  return {
    close(): void {
      if (timer !== undefined) clearTimeout(timer);
      watcher.close();
    },
  };
}
