/**
 * node:crypto, loaded on its first use. The verifying half of sign/ is bundled on the path every
 * queue-process takes (queue-write checks signatures by a synchronous call), and loading
 * node:crypto there costs every start about 6 MB and some milliseconds, signed packets or not;
 * as seal.ts loads node:zlib.
 */
import type nodeCrypto from 'node:crypto';

let loaded: typeof nodeCrypto | undefined;

export function crypto(): typeof nodeCrypto {
  loaded ??= process.getBuiltinModule('node:crypto');
  return loaded;
}
