/**
 * Moving a packet between queues exactly once (src/queue/transfer.ts): the journal, the target's
 * numbers, and the completion of a move a crash cut short, at each step of its table.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader, type PacketHeader, Queue } from '../../src/lowlevel.js';
import { readHeaderSync } from '../../src/packet/read.js';
import {
  assertTwoQueues,
  completeTransfer,
  ensureQueueDir,
  readJournal,
  TRANSFER_FILE,
  transferJob,
  WRITESEQ_FILE,
} from '../../src/queue/transfer.js';
import { tempDir } from '../helpers.js';

const failure = {
  queue: '/q',
  seq: 1n,
  attempts: 2,
  outcome: 'failure' as const,
  why: 'command exited with status 3',
  at: '2030-01-01T00:00:00.000Z',
};

function setup() {
  const dir = tempDir();
  const from = Queue.init(path.join(dir, 'q'));
  const toDir = path.join(dir, 'failed');
  ensureQueueDir(toDir);
  const to = Queue.open(toDir);
  const h: PacketHeader = {
    seq: 7n,
    ctime: { secs: 1700000000n, nanos: 5 },
    cmd: { kind: 'Command', params: [Buffer.from('a')], env: [] },
    retries: 2n,
  };
  const name = from.writeBuffer(Buffer.concat([encodeHeader(h), Buffer.from('the payload')]));
  const entry = { filename: name, header: h };
  const read = (file: string) => {
    const fd = fs.openSync(to.jobPath(file), 'r');
    try {
      return { header: readHeaderSync(fd), all: fs.readFileSync(to.jobPath(file)) };
    } finally {
      fs.closeSync(fd);
    }
  };
  return { dir, from, to, entry, read };
}

describe('transfer', () => {
  it('copies the packet with its next number and the facts, payload as it was; the journal names it', async () => {
    const { from, to, entry, read } = setup();
    const note = transferJob(from, entry, to, { failure });
    expect(note.number).toBe(1n);
    const files = fs.readdirSync(to.jobsDir);
    expect(files).toEqual([`fspl-${note.id}.fspl`]);
    const { header, all } = read(files[0]!);
    expect(header).toMatchObject({ seq: 1n, retries: 2n, failure, ctime: { secs: 1700000000n, nanos: 5 } });
    expect(all.subarray(all.length - 11).toString()).toBe('the payload');
    expect(readJournal(from.dir)).toMatchObject({ seq: 7n, filename: entry.filename, number: 1n });
    expect(fs.readFileSync(path.join(to.dir, WRITESEQ_FILE), 'utf8')).toBe('2\n');
    // The next one takes 2; a number held by a job already there is never given again.
    fs.writeFileSync(path.join(to.dir, WRITESEQ_FILE), '1\n');
    const again = transferJob(from, entry, to, { failure });
    expect(again.number).toBe(2n);
  });

  it('after a crash with the journal only (step 2): the next start writes the packet, once', async () => {
    const { from, to, entry } = setup();
    const note = transferJob(from, entry, to, { failure });
    // As if the crash came before step 3: the packet not there, writeseq not moved.
    fs.unlinkSync(to.jobPath(`fspl-${note.id}.fspl`));
    fs.writeFileSync(path.join(to.dir, WRITESEQ_FILE), '1\n');
    const done = completeTransfer(from);
    expect(done).toMatchObject({ seq: 7n, filename: entry.filename, number: 1n });
    expect(fs.readdirSync(to.jobsDir)).toEqual([`fspl-${note.id}.fspl`]);
    // Completing again (a second crash before the source's record) writes nothing more.
    completeTransfer(from);
    expect(fs.readdirSync(to.jobsDir).length).toBe(1);
  });

  it('after a crash with the packet there (step 3 or 4): not written again', async () => {
    const { from, to, entry } = setup();
    transferJob(from, entry, to, { failure });
    fs.writeFileSync(path.join(to.dir, WRITESEQ_FILE), '1\n'); // step 4 lost
    expect(completeTransfer(from)).toMatchObject({ number: 1n });
    expect(fs.readdirSync(to.jobsDir).length).toBe(1);
    // The packet ran there already (nextseq past it): still not written again.
    fs.rmSync(to.jobsDir, { recursive: true });
    fs.mkdirSync(to.jobsDir);
    to.setNext(2n);
    expect(completeTransfer(from)).toMatchObject({ number: 1n });
    expect(fs.readdirSync(to.jobsDir)).toEqual([]);
  });

  it('a journal whose source job is gone (recorded before the crash) is removed, nothing written', async () => {
    const { from, to, entry } = setup();
    transferJob(from, entry, to, { failure });
    fs.unlinkSync(from.jobPath(entry.filename));
    expect(completeTransfer(from)).toBeUndefined();
    expect(fs.existsSync(path.join(from.dir, TRANSFER_FILE))).toBe(false);
  });

  it('ensureQueueDir makes a queue of a missing or empty directory, and refuses anything else', () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'empty'));
    ensureQueueDir(path.join(dir, 'empty'));
    expect(fs.readdirSync(path.join(dir, 'empty')).sort()).toEqual(['jobs', 'nextseq', 'nextseq.lock']);
    fs.mkdirSync(path.join(dir, 'other'));
    fs.writeFileSync(path.join(dir, 'other', 'x'), '');
    expect(() => ensureQueueDir(path.join(dir, 'other'))).toThrow(/is not a queue/);
  });

  it('refuses to move a packet into its own queue', () => {
    const dir = tempDir();
    const q = Queue.init(path.join(dir, 'q'));
    fs.symlinkSync(q.dir, path.join(dir, 'link'));
    expect(() => assertTwoQueues(q.dir, `${q.dir}/`)).toThrow(/is the queue .* itself/);
    expect(() => assertTwoQueues(q.dir, path.join(dir, 'link'))).toThrow(/itself/);
    expect(() => assertTwoQueues(q.dir, path.join(dir, 'other'))).not.toThrow();
  });

  it("waits while another move holds the target's numbers", async () => {
    const { from, to, entry } = setup();
    const lockFile = path.join(to.dir, `${WRITESEQ_FILE}.lock`);
    fs.writeFileSync(lockFile, '');
    const holder = spawn('flock', [lockFile, 'sleep', '0.4'], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 150)); // the holder has it
    const started = Date.now();
    const note = transferJob(from, entry, to, { failure });
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(note.number).toBe(1n);
    await new Promise((r) => holder.once('exit', r));
  });
});
