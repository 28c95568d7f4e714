/** The checks of the `allowList` and `denyList` options: lists of addresses, ranges and identities. */
import { CidrError, createIpList, type IpList } from './cidr.js';
import { type DenyList, toDenyList } from './deny-list.js';
import type { OptionFail } from './option.js';
import { RateLimitOptionsError } from './options-error.js';

/** `allowList`: CIDR ranges, addresses or range names (compiled), or an `IpList`. */
export function checkAllowList(list: unknown, fail: OptionFail): IpList {
  if (typeof list === 'object' && list !== null && !Array.isArray(list)) {
    if (typeof (list as IpList).has === 'function') return list as IpList;
  } else if (Array.isArray(list)) {
    try {
      return createIpList(list as string[]);
    } catch (error) {
      if (error instanceof CidrError) fail(error.reason, 'allowList', error.entry);
      throw error;
    }
  }
  return fail('must be an array of CIDR ranges or an IpList');
}

/** `denyList`: what `toDenyList` takes, its error named as the option. */
export function checkDenyList(list: unknown, fail: OptionFail): DenyList {
  try {
    return toDenyList(list);
  } catch (error) {
    if (error instanceof RateLimitOptionsError) fail(error.requirement, error.option, error.value);
    throw error;
  }
}
