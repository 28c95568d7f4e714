/** Storage keys and identity encoding. */

export {
  banKeyOf,
  base64url,
  buildKey,
  encodeKeyComponent,
  IDENTITY_KINDS,
  identityProblem,
  identityTag,
  isIdentityInput,
  isValidPrefix,
  policyKey,
  requestKey,
} from './build-keys.js';
export { sha256 } from './sha256.js';
