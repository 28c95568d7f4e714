/**
 * Reads the config folder (`*.yaml` and `*.yml`, dot files skipped, in name order) and watches it:
 * a change reloads the whole folder; a bad file keeps the previous config in force.
 */
import { type FSWatcher, readdirSync, readFileSync, realpathSync, watch } from 'node:fs';
import { basename, dirname, join } from 'node:path';
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
  /**
   * `RUNTIME_WATCH_ROOT`: watch the runtime root recursively, and its swaps when it is a symlink
   * (true), or the config folder (false).
   */
  readonly watchRoot: boolean;
  /** Milliseconds a burst of file events is gathered before one reload (default 100). */
  readonly debounceMs?: number;
}

/** A running watcher. */
export interface ConfigWatcher {
  close(): void;
}

/** The folder `path` resolves to now (a symlink followed), or undefined when it does not resolve. */
function targetOf(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** `watch`, or undefined when the path cannot be watched (it does not exist); errors are ignored. */
function tryWatch(
  path: string,
  options: { recursive: boolean },
  listener: (event: string, filename: string | null) => void,
): FSWatcher | undefined {
  try {
    const watcher = watch(path, { ...options, persistent: false }, listener);
    watcher.on('error', () => {});
    return watcher;
  } catch {
    return undefined;
  }
}

/**
 * Watches the config and reloads it after changes settle: `onLoad` with the new config, or
 * `onError` with the problem (the caller keeps the previous config).
 *
 * With `watchRoot`, every change below the runtime root reloads, and so does swapping the root
 * itself when it is a symlink to a versioned folder (the reference's way: `ln -s v2 tmp && mv -T
 * tmp current`): the root's parent folder is watched for the link's name, and after each reload
 * the root is watched again wherever it now points.
 */
export function watchConfig(options: ConfigWatchOptions, events: ConfigWatchEvents): ConfigWatcher {
  const debounceMs = options.debounceMs ?? 100;
  const root = options.runtimeRoot;
  let timer: NodeJS.Timeout | undefined;
  let rootWatcher: FSWatcher | undefined;
  let watchedTarget: string | undefined;
  const schedule = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(reload, debounceMs);
  };
  const watchTarget = (): void => {
    const target = targetOf(root);
    if (rootWatcher !== undefined && target === watchedTarget) return;
    rootWatcher?.close();
    watchedTarget = target;
    rootWatcher = tryWatch(root, { recursive: true }, schedule);
  };
  function reload(): void {
    timer = undefined;
    if (options.watchRoot) watchTarget();
    try {
      events.onLoad(loadConfigDir(options.configDir));
    } catch (error) {
      if (error instanceof ConfigError) events.onError(error);
      else events.onError(new ConfigError(options.configDir, undefined, undefined, String(error)));
    }
  }
  let parentWatcher: FSWatcher | undefined;
  if (options.watchRoot) {
    watchTarget();
    const name = basename(root);
    parentWatcher = tryWatch(dirname(root), { recursive: false }, (_event, filename) => {
      if (filename === name) schedule();
    });
  } else {
    rootWatcher = tryWatch(options.configDir, { recursive: false }, schedule);
  }
  return {
    close(): void {
      if (timer !== undefined) clearTimeout(timer);
      rootWatcher?.close();
      parentWatcher?.close();
    },
  };
}
