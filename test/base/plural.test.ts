/** Counts in messages: the singular for one, the plural for every other number, zero included. */
import { expect, test } from 'vitest';
import { plural } from '../../src/base/plural.js';

test('one packet, 0 and 2 packets; an irregular plural given; bigints too', () => {
  expect([plural(1, 'packet'), plural(0, 'packet'), plural(2, 'packet')]).toEqual([
    '1 packet',
    '0 packets',
    '2 packets',
  ]);
  expect([plural(1, 'batch', 'batches'), plural(3, 'batch', 'batches')]).toEqual(['1 batch', '3 batches']);
  expect([plural(1n, 'job'), plural(10n, 'job')]).toEqual(['1 job', '10 jobs']);
});
