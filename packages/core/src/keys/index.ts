/** Storage keys and identity encoding. */
export { banKeyOf, buildKey, identityTag, isValidPrefix, policyKey, requestKey } from './build-keys.js';
export { base64url, encodeKeyComponent } from './encode.js';
export { IDENTITY_KINDS, identityProblem, isIdentityInput } from './identity.js';
export { sha256 } from './sha256.js';
