/**
 * The run over a queue with plainly nothing to do (src/process/empty-queue.ts): done when the
 * queue is plainly empty, left to the full run at every doubt, and never changing what the full
 * run would not.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader, FileLock, Queue } from '../../src/lowlevel.js';
import { settleEmptyQueue } from '../../src/process/empty-queue.js';
import { loadNative } from '../../src/sys/native.js';
import { holdElsewhere, tempDir } from '../helpers.js';

const native = loadNative()?.flock !== undefined;
if (!native)
  console.warn('!!! empty-queue.test.ts: the native addon is not built: settleEmptyQueue always declines !!!');

function queue(): string {
  const dir = path.join(tempDir(), 'q');
  Queue.init(dir);
  return dir;
}

/** Each file of the queue: its bytes, for "nothing changed". */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = fs.readFileSync(p, 'latin1');
    }
  };
  walk(dir);
  return out;
}

describe.runIf(native)('settleEmptyQueue', () => {
  it('runs a plainly empty queue: the lock taken and left free, nothing changed', () => {
    const dir = queue();
    const before = contents(dir);
    expect(settleEmptyQueue(dir)).toBe(true);
    expect(contents(dir)).toEqual(before);
    FileLock.acquire(path.join(dir, 'nextseq.lock'), { create: false, wait: false }).release();
  });

  it('leaves a queue with a job, or with any file in jobs/, to the full run', () => {
    const dir = queue();
    Queue.open(dir).writeBuffer(
      encodeHeader({ seq: 1n, ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } }),
    );
    expect(settleEmptyQueue(dir)).toBe(false);
    const other = queue();
    fs.writeFileSync(path.join(other, 'jobs', 'not-a-job'), '');
    expect(settleEmptyQueue(other)).toBe(false);
  });

  it('leaves a queue whose lock another process holds to the full run (which waits, then says so)', async () => {
    const dir = queue();
    const holder = await holdElsewhere(path.join(dir, 'nextseq.lock'), 5);
    try {
      expect(settleEmptyQueue(dir)).toBe(false);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('leaves a note in the lock file (a record to complete) to the full run, untouched', () => {
    const dir = queue();
    const lock = path.join(dir, 'nextseq.lock');
    fs.writeFileSync(lock, 'S 1 fspl-x.fspl\n');
    expect(settleEmptyQueue(dir)).toBe(false);
    expect(fs.readFileSync(lock, 'utf8')).toBe('S 1 fspl-x.fspl\n');
  });

  it('leaves a nextseq that is missing, not a number, or planted to the full run', () => {
    const missing = queue();
    fs.rmSync(path.join(missing, 'nextseq'));
    expect(settleEmptyQueue(missing)).toBe(false);
    const garbage = queue();
    fs.writeFileSync(path.join(garbage, 'nextseq'), 'twelve\n');
    expect(settleEmptyQueue(garbage)).toBe(false);
    const tooLarge = queue();
    fs.writeFileSync(path.join(tooLarge, 'nextseq'), '18446744073709551616\n');
    expect(settleEmptyQueue(tooLarge)).toBe(false);
    const linked = queue();
    const elsewhere = path.join(tempDir(), 'nextseq');
    fs.writeFileSync(elsewhere, '1\n');
    fs.rmSync(path.join(linked, 'nextseq'));
    fs.symlinkSync(elsewhere, path.join(linked, 'nextseq'));
    expect(settleEmptyQueue(linked)).toBe(false);
  });

  it('leaves a lock file that is a link, has two names, or is missing to the full run', () => {
    const linked = queue();
    const lock = path.join(linked, 'nextseq.lock');
    const elsewhere = path.join(tempDir(), 'lock');
    fs.writeFileSync(elsewhere, '');
    fs.rmSync(lock);
    fs.symlinkSync(elsewhere, lock);
    expect(settleEmptyQueue(linked)).toBe(false);
    const twoNames = queue();
    fs.linkSync(path.join(twoNames, 'nextseq.lock'), path.join(tempDir(), 'second-name'));
    expect(settleEmptyQueue(twoNames)).toBe(false);
    const missing = queue();
    fs.rmSync(path.join(missing, 'nextseq.lock'));
    expect(settleEmptyQueue(missing)).toBe(false);
    expect(fs.existsSync(path.join(missing, 'nextseq.lock'))).toBe(false);
  });

  it('leaves what is not a queue to the full run', () => {
    expect(settleEmptyQueue(path.join(tempDir(), 'nothing'))).toBe(false);
    const file = path.join(tempDir(), 'file');
    fs.writeFileSync(file, '');
    expect(settleEmptyQueue(file)).toBe(false);
  });
});

describe('settleEmptyQueue without the addon', () => {
  it('declines (FSPL_NO_NATIVE=1): the full run takes the lock through fs-ext', () => {
    const dir = queue();
    const was = process.env.FSPL_NO_NATIVE;
    process.env.FSPL_NO_NATIVE = '1';
    try {
      expect(settleEmptyQueue(dir)).toBe(false);
    } finally {
      if (was === undefined) delete process.env.FSPL_NO_NATIVE;
      else process.env.FSPL_NO_NATIVE = was;
    }
  });
});
