/** Token names (src/net/place/token.ts): the number a numbered name carries. */

import { randomUUID } from 'node:crypto';
import { expect, test } from 'vitest';
import { nameNumber, nameOrder, numberedName } from '../../../src/net/place/token.js';

test('nameNumber reads the number of a numbered name as nameOrder does, and nothing from other names', () => {
  for (const seq of [1n, 42n, 123456789012n, 2n ** 53n]) {
    const name = numberedName(seq, randomUUID());
    expect(nameNumber(name)).toBe(Number(seq));
    expect(Number(nameOrder(name))).toBe(nameNumber(name));
  }
  expect(nameNumber(`fspl-${randomUUID()}.fspl`)).toBeUndefined();
  expect(nameNumber('fspl-0000000000000000000x-00000000-0000-0000-0000-000000000000.fspl')).toBeUndefined();
});
