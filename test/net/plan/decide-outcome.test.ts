/** The failure policy's decision (src/net/plan/decide-outcome.ts): pure, a verdict from a firing's facts. */
import { describe, expect, test } from 'vitest';
import { decide, type FiringFacts, type Ran, RETRY_DELAY_MS } from '../../../src/net/plan/decide-outcome.js';

type Facts = FiringFacts<string, Ran, string>;

const ok: Ran = { ok: true, abandoned: false };
const failed: Ran = { ok: false, abandoned: false };
const abandoned: Ran = { ok: false, abandoned: true };
/** A first attempt of a transition with no retries and no error place, the run going on. */
const base: Facts = { ended: ok, stopping: false, attempt: 1, retries: 0 };

describe('decide', () => {
  const cases: Array<[string, Partial<Facts>, ReturnType<typeof decide<string, Ran, string>>]> = [
    ['success commits', {}, { kind: 'commit', ran: ok }],
    ['a NOP commits with no outputs', { ended: { nop: true } }, { kind: 'nop' }],
    [
      'a vanished token voids the firing, whatever its end',
      { vanished: 'tok-3' },
      { kind: 'vanished', token: 'tok-3' },
    ],
    [
      'a vanished token voids a NOP too',
      { ended: { nop: true }, vanished: 'tok-1' },
      { kind: 'vanished', token: 'tok-1' },
    ],
    [
      'a vanished token comes before a failure',
      { ended: failed, vanished: 'tok-2', errorPlace: 'err' },
      { kind: 'vanished', token: 'tok-2' },
    ],
    [
      'a token its signature refused as the firing opened it: set aside, nothing retried nor made into error tokens',
      { ended: failed, refused: 'tok-4', retries: 3, errorPlace: 'err' },
      { kind: 'refused', refusal: 'tok-4' },
    ],
    [
      'a firing on a later number than a refused token is dropped, even a success (it would skip that number)',
      { voided: true },
      { kind: 'drop' },
    ],
    ['a voided NOP is dropped too', { ended: { nop: true }, voided: true }, { kind: 'drop' }],
    [
      'a refusal is said even while the run stops',
      { ended: failed, refused: 'tok-4', stopping: true },
      { kind: 'refused', refusal: 'tok-4' },
    ],
    [
      'a vanished token comes before a refusal (its place is read again)',
      { ended: failed, vanished: 'tok-1', refused: 'tok-4' },
      { kind: 'vanished', token: 'tok-1' },
    ],
    ['an abandoned firing is dropped', { ended: abandoned }, { kind: 'drop' }],
    ['an abandoned firing is dropped even with retries left', { ended: abandoned, retries: 3 }, { kind: 'drop' }],
    ['a success while the run stops still commits', { stopping: true }, { kind: 'commit', ran: ok }],
    [
      'a failure while the run stops is dropped (the token stays)',
      { ended: failed, stopping: true, retries: 3, errorPlace: 'err' },
      { kind: 'drop' },
    ],
    [
      'a failure on a full staging disk waits for room',
      { ended: failed, stagingFull: 'ENOSPC', retries: 3 },
      { kind: 'wait-for-room', ran: failed, err: 'ENOSPC' },
    ],
    [
      'a full staging disk while stopping: dropped',
      { ended: failed, stagingFull: 'ENOSPC', stopping: true },
      { kind: 'drop' },
    ],
    ['a success on a full staging disk commits', { stagingFull: 'ENOSPC' }, { kind: 'commit', ran: ok }],
    [
      'a failure with retries left is retried after 200 ms',
      { ended: failed, attempt: 1, retries: 2 },
      { kind: 'retry', ran: failed, delayMs: RETRY_DELAY_MS },
    ],
    [
      'the last retry waits attempt x 200 ms',
      { ended: failed, attempt: 2, retries: 2, errorPlace: 'err' },
      { kind: 'retry', ran: failed, delayMs: 2 * RETRY_DELAY_MS },
    ],
    [
      'retries spent, an error place: error tokens',
      { ended: failed, attempt: 3, retries: 2, errorPlace: 'err' },
      { kind: 'error-tokens', ran: failed, place: 'err' },
    ],
    [
      'no retries, an error place: error tokens',
      { ended: failed, errorPlace: 'err' },
      { kind: 'error-tokens', ran: failed, place: 'err' },
    ],
    [
      'retries spent, no error place: the transition stops',
      { ended: failed, attempt: 3, retries: 2 },
      { kind: 'stop', ran: failed },
    ],
    ['no retries, no error place: the transition stops', { ended: failed }, { kind: 'stop', ran: failed }],
  ];
  test.each(cases)('%s', (_, facts, verdict) => {
    expect(decide({ ...base, ...facts })).toEqual(verdict);
  });
});
