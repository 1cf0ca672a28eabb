/**
 * refused/: a refused packet moved once, with its note; a move a power cut left half made is finished, not made twice.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { finishCutRefusals, listRefused, refuseJobFile } from '../../src/queue/refused.js';

let dir: string;
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function queueWith(name: string): string {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-refused-'));
  fs.mkdirSync(path.join(dir, 'jobs'));
  fs.writeFileSync(path.join(dir, 'jobs', name), 'forged');
  return dir;
}

test('moves the packet with its note; a second packet of the same name gets a counter', () => {
  const q = queueWith('fspl-a.fspl');
  expect(refuseJobFile(q, 'fspl-a.fspl', 'packet 2 refused: not signed')).toBe('fspl-a.fspl');
  fs.writeFileSync(path.join(q, 'jobs', 'fspl-a.fspl'), 'forged again');
  expect(refuseJobFile(q, 'fspl-a.fspl', 'packet 2 refused: not signed')).toBe('fspl-a.fspl.1');
  expect(fs.readdirSync(path.join(q, 'jobs'))).toEqual([]);
  expect(listRefused(q).map((r) => [r.filename, r.why.endsWith('packet 2 refused: not signed')])).toEqual([
    ['fspl-a.fspl', true],
    ['fspl-a.fspl.1', true],
  ]);
  // Gone already (another processor refused it first): nothing moved, no stray note.
  expect(refuseJobFile(q, 'fspl-a.fspl', 'why')).toBeUndefined();
  expect(fs.readdirSync(path.join(q, 'refused')).sort()).toEqual([
    'fspl-a.fspl',
    'fspl-a.fspl.1',
    'fspl-a.fspl.1.why',
    'fspl-a.fspl.why',
  ]);
});

test(
  'both names left by a power cut (one file, refused/ ' +
    'fsynced, jobs/ not): the name in jobs/ goes, no copy is made',
  () => {
    const q = queueWith('fspl-b.fspl');
    fs.mkdirSync(path.join(q, 'refused'));
    fs.linkSync(path.join(q, 'jobs', 'fspl-b.fspl'), path.join(q, 'refused', 'fspl-b.fspl'));
    fs.writeFileSync(
      path.join(q, 'refused', 'fspl-b.fspl.why'),
      '2026-11-28T00:00:00.000Z packet 2 refused: not signed\n',
    );
    expect(refuseJobFile(q, 'fspl-b.fspl', 'packet 2 refused: not signed')).toBe('fspl-b.fspl');
    expect(fs.readdirSync(path.join(q, 'jobs'))).toEqual([]);
    expect(fs.readdirSync(path.join(q, 'refused')).sort()).toEqual(['fspl-b.fspl', 'fspl-b.fspl.why']);
    // Another file of that name in jobs/ is a new packet: moved beside it, with a counter.
    fs.writeFileSync(path.join(q, 'jobs', 'fspl-b.fspl'), 'another');
    expect(refuseJobFile(q, 'fspl-b.fspl', 'why')).toBe('fspl-b.fspl.1');
  },
);

test(
  'finishCutRefusals, as a run takes the lock: each name in ' +
    'jobs/ that is its twin in refused/ goes; other files stay',
  () => {
    const q = queueWith('fspl-c.fspl');
    expect(finishCutRefusals(q)).toBe(0); // no refused/ yet
    fs.mkdirSync(path.join(q, 'refused'));
    fs.linkSync(path.join(q, 'jobs', 'fspl-c.fspl'), path.join(q, 'refused', 'fspl-c.fspl'));
    fs.writeFileSync(
      path.join(q, 'refused', 'fspl-c.fspl.why'),
      '2026-11-28T00:00:00.000Z packet 2 refused: not signed\n',
    );
    // Same names, other files: a new packet named as a refused one, a note's name planted in jobs/.
    fs.writeFileSync(path.join(q, 'refused', 'fspl-d.fspl'), 'refused before');
    fs.writeFileSync(path.join(q, 'jobs', 'fspl-d.fspl'), 'a new packet');
    fs.linkSync(path.join(q, 'refused', 'fspl-c.fspl.why'), path.join(q, 'jobs', 'fspl-c.fspl.why'));
    expect(finishCutRefusals(q)).toBe(1);
    expect(fs.readdirSync(path.join(q, 'jobs')).sort()).toEqual(['fspl-c.fspl.why', 'fspl-d.fspl']);
    expect(fs.readdirSync(path.join(q, 'refused')).sort()).toEqual(['fspl-c.fspl', 'fspl-c.fspl.why', 'fspl-d.fspl']);
    expect(finishCutRefusals(q)).toBe(0);
  },
);
