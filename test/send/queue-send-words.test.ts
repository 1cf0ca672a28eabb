/**
 * What `fspl queue-send` says (src/send/queue-send-words.ts): a run's summary in one line, each
 * outcome once, counts with their plurals right, and what duplicates are in words that say what
 * happened to them.
 */
import { expect, test } from 'vitest';
import { describeQueueSendSummary, duplicatesText, packetsWait, sentLine } from '../../src/send/queue-send-words.js';

const run = { to: 'ssh:b:/q', sent: 0, duplicates: 0, connections: 0, waiting: 0, next: 1n };

test('counts: one packet waits, 0 and 2 packets wait; duplicates say they were sent again and dropped', () => {
  expect([packetsWait(0), packetsWait(1), packetsWait(2)]).toEqual([
    '0 packets wait',
    '1 packet waits',
    '2 packets wait',
  ]);
  expect(duplicatesText(0)).toBe('');
  expect(duplicatesText(1)).toBe(' (1 of them sent again and dropped by the receiver, which had it already)');
  expect(duplicatesText(12)).toBe(' (12 of them sent again and dropped by the receiver, which had them already)');
  expect(sentLine('ssh:b:/q', 1, 0, false, 1)).toBe('Sent 1 packet to ssh:b:/q over one connection; 1 packet waits');
  expect(sentLine('nncp:b:fspl', 25, 0, true, 0)).toBe('Handed 25 packets for nncp:b:fspl to NNCP; 0 packets wait');
});

test('a summary: what was delivered, or why nothing was; what waits, and the next number', () => {
  const ssh = { handed: false };
  expect(describeQueueSendSummary({ ...run, sent: 20, duplicates: 12, connections: 1, next: 21n }, ssh)).toBe(
    'sent 20 packets (12 of them sent again and dropped by the receiver, which ' +
      'had them already) to ssh:b:/q over 1 connection; 0 packets wait, next 21',
  );
  expect(
    describeQueueSendSummary({ ...run, to: 'nncp:b:fspl', sent: 1, connections: 1, next: 2n }, { handed: true }),
  ).toBe('handed 1 packet for nncp:b:fspl to NNCP in 1 batch; 0 packets wait, next 2');
  expect(
    describeQueueSendSummary({ ...run, to: 'nncp:b:fspl', sent: 30, connections: 2, next: 31n }, { handed: true }),
  ).toBe('handed 30 packets for nncp:b:fspl to NNCP in 2 batches; 0 packets wait, next 31');
  // Failed before anything went: why, not "sent 0 packets ... over 1 connection".
  expect(
    describeQueueSendSummary({ ...run, connections: 1, waiting: 1, error: 'ssh exited with status 255' }, ssh),
  ).toBe('cannot deliver to ssh:b:/q: ssh exited with status 255; 1 packet waits, next 1');
  expect(describeQueueSendSummary({ ...run, sent: 5, connections: 2, waiting: 3, next: 6n, error: 'cut' }, ssh)).toBe(
    'sent 5 packets to ssh:b:/q over 2 connections, then could not deliver: cut; 3 packets wait, next 6',
  );
  expect(describeQueueSendSummary({ ...run, connections: 1, waiting: 3, stopped: 'another sender' }, ssh)).toBe(
    'stopped sending to ssh:b:/q: another sender; 3 packets wait, next 1',
  );
  expect(describeQueueSendSummary({ ...run, waiting: 2, next: 4n, blocked: 'waiting for packet 4' }, ssh)).toBe(
    'nothing sent to ssh:b:/q; 2 packets wait, next 4; waiting for packet 4',
  );
  // Under --watch the counts are the whole run's.
  expect(
    describeQueueSendSummary({ ...run, sent: 60, connections: 3, next: 61n }, { handed: false, watch: true }),
  ).toBe('in all, sent 60 packets to ssh:b:/q over 3 connections; 0 packets wait, next 61');
});
