/** The `logger` option of every adapter: where Sluice's coded warnings and errors go. */
import { isLogger, type SluiceLogger } from '../warn.js';
import { MIDDLEWARE, type OptionSurface, option } from './option.js';

const HTTP: readonly OptionSurface[] = [...MIDDLEWARE, 'nestjs-module'];

/**
 * Where the coded warnings and errors go (trust proxy, no client IP, a policy choice or a
 * settle that failed): `{ warn(entry), error?(entry) }`, each entry `{ code, message, fields }`.
 * Every occurrence is handed over. Unset: `console.warn`, once per code per process.
 */
export const LOGGER_OPTION = option<SluiceLogger>({
  default: undefined,
  defaultDoc: '`console.warn`, once per code',
  doc: 'Where coded warnings and errors go: `{ warn(entry), error?(entry) }` with `{ code, message, fields }`.',
  surfaces: HTTP,
  check: (value, fail) =>
    isLogger(value) ? value : fail('must be an object with warn(entry) (and optionally error(entry))'),
});
