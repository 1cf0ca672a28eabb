/** FileLock: exclusive, non-blocking, with a short grace for locks held only for an instant. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockedError } from '../../src/base/errors.js';
import { FileLock, isLocked } from '../../src/sys/lock.js';
import { holdElsewhere, tempDir } from '../helpers.js';

describe('FileLock', () => {
  it('waits out a lock held for an instant (a probe), and fails on one that stays held', async () => {
    const file = path.join(tempDir(), 'x.lock');
    fs.writeFileSync(file, '');
    // On a very busy machine the holder may outlive the 100 ms grace: try again (a lock that is
    // never taken after its holder let go would fail every attempt).
    let acquired = false;
    for (let attempt = 0; attempt < 5 && !acquired; attempt++) {
      const probe = await holdElsewhere(file, 0.01);
      try {
        FileLock.acquire(file).release();
        acquired = true;
      } catch (err) {
        expect(err).toBeInstanceOf(LockedError);
      }
      if (probe.exitCode === null) await new Promise((r) => probe.once('exit', r));
    }
    expect(acquired).toBe(true);

    const holder = await holdElsewhere(file, 5);
    try {
      expect(() => FileLock.acquire(file)).toThrow(LockedError);
    } finally {
      holder.kill();
    }
  });

  it('keeps a one-line note in the lock file while held', () => {
    const file = path.join(tempDir(), 'y.lock');
    const lock = FileLock.acquire(file, { create: true });
    try {
      expect(lock.readNote()).toBe('');
      lock.writeNote('S 12 fspl-a-long-file-name.fspl');
      lock.writeNote('T 3 fspl-b.fspl');
      expect(lock.readNote()).toBe('T 3 fspl-b.fspl');
      lock.clearNote();
      expect(fs.readFileSync(file, 'utf8')).toBe('');
    } finally {
      lock.release();
    }
    expect(spawnSync('flock', ['-n', file, 'true']).status).toBe(0);
  });
});

it('empties a lock file that holds something, and leaves one known to be empty as it is', () => {
  const file = path.join(tempDir(), 'z.lock');
  fs.writeFileSync(file, 'left by something else');
  const old = new Date('2020-01-01T00:00:00Z');
  const mtime = () => fs.statSync(file).mtimeMs;
  const lock = FileLock.acquire(file);
  try {
    lock.clearNote(); // never read: emptied, whatever it holds
    expect(fs.statSync(file).size).toBe(0);
    fs.utimesSync(file, old, old);
    lock.clearNote(); // emptied by this lock: nothing to do
    expect(mtime()).toBe(old.getTime());
    lock.writeNote('S 1 fspl-a.fspl');
    lock.clearNote();
    expect(fs.statSync(file).size).toBe(0);
    fs.writeFileSync(file, 'x'); // a byte that is no note
    expect(lock.readNote()).toBe('');
    lock.clearNote(); // read as holding something: emptied
    expect(fs.statSync(file).size).toBe(0);
    fs.utimesSync(file, old, old);
    expect(lock.readNote()).toBe('');
    lock.clearNote(); // read empty: left as it is
    expect(mtime()).toBe(old.getTime());
    fs.writeFileSync(file, 'y'); // never happens while the lock is held, but a batch's note
    lock.noteOp('S 2 fspl-b.fspl'); // given to a batch: not known to be empty any more
    lock.clearNote();
    expect(fs.statSync(file).size).toBe(0);
  } finally {
    lock.release();
  }
});

describe('flock through the native addon or fs-ext (FSPL_NO_NATIVE=1)', () => {
  for (const noNative of [undefined, '1']) {
    it(`excludes another holder and sees it in isLocked${noNative ? ', through fs-ext' : ''}`, async () => {
      const saved = process.env.FSPL_NO_NATIVE;
      if (noNative) process.env.FSPL_NO_NATIVE = noNative;
      else delete process.env.FSPL_NO_NATIVE;
      try {
        const file = path.join(tempDir(), 'z.lock');
        const lock = FileLock.acquire(file, { create: true });
        expect(isLocked(file)).toBe(true);
        // Another open file description is refused while this one holds the lock...
        expect(() => FileLock.acquire(file)).toThrow(LockedError);
        // ...and so is another process (flock(1) -n exits 1 on a busy lock).
        expect(spawnSync('flock', ['-n', file, 'true']).status).toBe(1);
        lock.release();
        expect(isLocked(file)).toBe(false);
        expect(spawnSync('flock', ['-n', file, 'true']).status).toBe(0);
        const holder = await holdElsewhere(file, 5);
        try {
          expect(() => FileLock.acquire(file)).toThrow(LockedError);
        } finally {
          holder.kill();
        }
      } finally {
        if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
        else process.env.FSPL_NO_NATIVE = saved;
      }
    });
  }
});
