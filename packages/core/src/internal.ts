/**
 * Not an export of the package: `dist/internal.js` is built for the benchmarks in bench/, which
 * send the decide script's calls by hand (the script, its argument codec, the key layout). The
 * package's `exports` does not list it, so no application can import it by name; it changes with
 * the script. Applications use `RedisStore`, which does all of this.
 */

export { buildKey } from './keys/index.js';
export {
  DECIDE_SCRIPT,
  DECIDE_SCRIPTS,
  decideScriptFor,
  decodeScriptReply,
  encodeScriptArgs,
  encodeScriptKeys,
  RESET_SCRIPT,
  ScriptCall,
} from './redis/script.js';
export { SETTLE_SCRIPT } from './redis/settle-script.js';
