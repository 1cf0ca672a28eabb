import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatStatusText } from '../../src/cli/text/status-text.js';
import { encodeHeader, FileLock, makeHeader, Queue, QueueError } from '../../src/lowlevel.js';
import { formatRanges, toRanges } from '../../src/status/ranges.js';
import { queueStatus } from '../../src/status/report.js';
import { tempDir } from '../helpers.js';

const NOW = new Date('2030-01-02T03:04:05Z');
const NOW_SECS = BigInt(NOW.getTime() / 1000);

function packet(seq: bigint, secs = NOW_SECS - 60n): Buffer {
  const h = makeHeader({ seq, ctime: { secs, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } });
  return Buffer.concat([encodeHeader(h), Buffer.from('payload')]);
}

function newQueue(options: { appendOnly?: boolean } = {}): Queue {
  return Queue.init(path.join(tempDir(), 'q'), options);
}

function write(q: Queue, ...seqs: bigint[]): string[] {
  return seqs.map((s) => q.writeBuffer(packet(s)));
}

const status = (q: Queue) => queueStatus(q, { now: NOW });
describe('queueStatus', () => {
  it('an empty queue is idle', async () => {
    const s = await status(newQueue());
    expect(s.state).toBe('idle');
    expect(s.canProgress).toBe(true);
    expect(s.nextseq).toEqual({ state: 'present', value: 1n });
    expect(s.lock.state).toBe('free');
    expect([s.jobs, s.waiting, s.runnable, s.belowNext]).toEqual([0, 0, 0, 0]);
    expect(s.gap).toBeUndefined();
    expect(s.oldest).toBeUndefined();
    expect(s.problems).toEqual([]);
  });

  it('is ready when the next job is present, and counts what can run before a later gap', async () => {
    const q = newQueue();
    write(q, 1n, 2n, 3n, 5n, 6n, 9n);
    const s = await status(q);
    expect(s.state).toBe('ready');
    expect(s.runnable).toBe(3);
    expect(s.waiting).toBe(6);
    expect(formatRanges(s.waitingSeqs)).toBe('1-3, 5-6, 9');
    expect(s.gap).toEqual({ seq: 4n, isNext: false, presentBeyond: toRanges([5n, 6n, 9n]) });
  });

  it('a missing next job makes the queue stuck and lists what is present beyond it', async () => {
    const q = newQueue();
    q.setNext(5n);
    write(q, 7n, 8n, 9n, 12n);
    const s = await status(q);
    expect(s.state).toBe('stuck');
    expect(s.canProgress).toBe(false);
    expect(s.runnable).toBe(0);
    expect(s.problems).toEqual([{ code: 'next-missing', message: 'next job 5 is missing' }]);
    expect(s.gap!.isNext).toBe(true);
    expect(formatRanges(s.gap!.presentBeyond)).toBe('7-9, 12');
  });

  it('reports jobs below nextseq as processed, not waiting', async () => {
    const q = newQueue();
    write(q, 1n, 2n, 4n);
    q.setNext(3n);
    const s = await status(q);
    expect(s.belowNext).toBe(2);
    expect(formatRanges(s.belowNextSeqs)).toBe('1-2');
    expect(s.waiting).toBe(1);
    expect(s.state).toBe('stuck'); // 3 is missing, 4 waits
    q.setNext(5n);
    const idle = await status(q);
    expect(idle.state).toBe('idle');
    expect(idle.belowNext).toBe(3);
  });

  it('a duplicate sequence number makes the queue stuck, even below nextseq', async () => {
    const q = newQueue();
    const [a, b] = write(q, 1n, 1n, 2n);
    const s = await status(q);
    expect(s.state).toBe('stuck');
    expect(s.duplicates).toHaveLength(1);
    expect(s.duplicates[0]!.seq).toBe(1n);
    expect([...s.duplicates[0]!.files].sort()).toEqual([a, b].sort());
    expect(s.problems.map((p) => p.code)).toEqual(['duplicate-seq']);
    q.setNext(3n);
    expect((await status(q)).state).toBe('stuck');
  });

  it('explains gzip files read without a decoder, and reads them with -d zcat', async () => {
    const q = newQueue();
    for (const seq of [1n, 2n])
      fs.writeFileSync(q.jobPath(`fspl-${seq}.fspl`), execFileSync('gzip', ['-c'], { input: packet(seq) }));
    const s = await status(q);
    expect(s.jobs).toBe(0);
    expect(s.state).toBe('idle');
    expect(s.undecodable.map((f) => [f.filename, f.kind, f.cause])).toEqual([
      ['fspl-1.fspl', 'gzip', 'gzip data: did you forget -d zcat?'],
      ['fspl-2.fspl', 'gzip', 'gzip data: did you forget -d zcat?'],
    ]);
    const d = await queueStatus(Queue.open(q.dir, { decoder: 'zcat' }), { now: NOW });
    expect(d.undecodable).toEqual([]);
    expect(d.state).toBe('ready');
    expect(d.runnable).toBe(2);
    expect(d.decoder).toBe('zcat');
  });

  it('says the decoder failed on a file it can not decode', async () => {
    const q = Queue.open(newQueue().dir, { decoder: 'exec 2>/dev/null; zcat' });
    q.writeBuffer(packet(1n));
    const s = await queueStatus(q, { now: NOW });
    expect(s.undecodable).toHaveLength(1);
    expect(s.undecodable[0]!.cause).toMatch(
      /^decoder "exec 2>\/dev\/null; zcat" failed: .*; the file itself is a plain packet/,
    );
  });

  it('diagnoses empty, truncated, damaged and foreign files', async () => {
    const q = newQueue();
    const good = packet(1n);
    fs.writeFileSync(q.jobPath('fspl-empty.fspl'), '');
    fs.writeFileSync(q.jobPath('fspl-short.fspl'), good.subarray(0, 10));
    fs.writeFileSync(q.jobPath('fspl-trunc.fspl'), good.subarray(0, 35));
    const bad = Buffer.from(good);
    bad[40]! ^= 1;
    fs.writeFileSync(q.jobPath('fspl-crc.fspl'), bad);
    fs.writeFileSync(q.jobPath('fspl-text.fspl'), 'hello world\n');
    fs.writeFileSync(q.jobPath('fspl-xz.fspl'), execFileSync('xz', ['-c'], { input: good }));
    fs.mkdirSync(q.jobPath('fspl-dir.fspl'));
    const causes = Object.fromEntries((await status(q)).undecodable.map((f) => [f.filename, f.cause]));
    expect(causes['fspl-empty.fspl']).toBe('empty file');
    expect(causes['fspl-short.fspl']).toMatch(
      /^truncated header: the file has only 10 bytes; a header needs at least 30 bytes/,
    );
    expect(causes['fspl-trunc.fspl']).toMatch(
      new RegExp(`^truncated header: the file has only 35 bytes; its header needs ${good.length - 7} bytes`),
    );
    expect(causes['fspl-crc.fspl']).toBe('damaged packet: CRC-32 mismatch on metadata');
    expect(causes['fspl-text.fspl']).toBe('not a filespooler packet (starts with 68 65 6c 6c 6f 20 77 6f)');
    expect(causes['fspl-xz.fspl']).toBe('xz data: did you forget -d xzcat?');
    expect(causes['fspl-dir.fspl']).toBe('not a regular file (a directory)');
  });

  it('lists temporary, output and other files', async () => {
    const q = newQueue();
    write(q, 1n);
    fs.writeFileSync(q.jobPath('tmp-fspl-abc.fspl.tmp'), 'part');
    const old = new Date(NOW.getTime() - 7200_000);
    fs.utimesSync(q.jobPath('tmp-fspl-abc.fspl.tmp'), old, old);
    fs.writeFileSync(q.jobPath('fspl-abc.fspl.out'), 'output');
    fs.writeFileSync(q.jobPath('notes.txt'), 'x');
    fs.mkdirSync(q.jobPath('incoming'));
    // A cut upload of queue-send's receiver (or queue-receive): named for what it is, not a stray file.
    fs.writeFileSync(q.jobPath('.fspl-in-0b8e4c1a-2f6d-4c59-9a43-6f1e5d2c7b10.part'), 'half');
    fs.utimesSync(q.jobPath('.fspl-in-0b8e4c1a-2f6d-4c59-9a43-6f1e5d2c7b10.part'), old, old);
    const s = await status(q);
    expect(s.tempFiles).toEqual([
      { filename: '.fspl-in-0b8e4c1a-2f6d-4c59-9a43-6f1e5d2c7b10.part', kind: 'upload', size: 4, ageSeconds: 7200 },
      { filename: 'tmp-fspl-abc.fspl.tmp', kind: 'write', size: 4, ageSeconds: 7200 },
    ]);
    expect(formatStatusText(s)).toMatch(
      new RegExp(
        /^temp file \.fspl-in-.*\.part \(4 bytes, modified 2h 0m ago\): an upload in progress /.source +
          /\(queue-send's receiver over ssh, or queue-receive\), or cut short: the next one finishes or /.source +
          /removes it$/.source,
        'm',
      ),
    );
    expect(s.outputFiles).toEqual(['fspl-abc.fspl.out']);
    expect(s.otherFiles).toEqual([
      { filename: 'incoming', type: 'directory' },
      { filename: 'notes.txt', type: 'file' },
    ]);
    expect(s.state).toBe('ready'); // none of these block anything
  });

  it('gives the ages of the oldest and newest waiting jobs', async () => {
    const q = newQueue();
    q.writeBuffer(packet(2n, NOW_SECS - 3600n));
    q.writeBuffer(packet(3n, NOW_SECS - 10n));
    q.writeBuffer(packet(4n, NOW_SECS - 600n));
    q.writeBuffer(packet(1n, NOW_SECS - 99999n)); // below nextseq: not counted
    q.setNext(2n);
    const s = await status(q);
    expect([s.oldest!.seq, s.oldest!.ageSeconds]).toEqual([2n, 3600]);
    expect([s.newest!.seq, s.newest!.ageSeconds]).toEqual([3n, 10]);
  });

  it('sees the lock held by another holder', async () => {
    const q = newQueue();
    const lock = FileLock.acquire(`${q.seqfilePath}.lock`, { create: false });
    try {
      expect((await status(q)).lock.state).toBe('held');
    } finally {
      lock.release();
    }
    expect((await status(q)).lock.state).toBe('free');
  });

  it('an append-only queue has no nextseq and is not stuck', async () => {
    const q = newQueue({ appendOnly: true });
    write(q, 3n, 5n);
    const s = await status(q);
    expect(s.state).toBe('append-only');
    expect(s.canProgress).toBe(true);
    expect(s.nextseq).toEqual({ state: 'append-only' });
    expect(s.lock.state).toBe('missing');
    expect(s.waiting).toBe(2);
    expect(s.runnable).toBe(0);
    expect(s.gap).toBeUndefined();
  });

  it('a missing nextseq counts as 1; a damaged one or a missing lock file is a problem', async () => {
    const q = newQueue();
    write(q, 1n);
    fs.unlinkSync(q.seqfilePath);
    const s = await status(q);
    expect(s.nextseq).toEqual({ state: 'missing', value: 1n });
    expect(s.state).toBe('ready');
    fs.writeFileSync(q.seqfilePath, 'abc\n');
    const bad = await status(q);
    expect(bad.state).toBe('stuck');
    expect(bad.nextseq.state).toBe('invalid');
    expect(bad.problems.map((p) => p.code)).toEqual(['bad-nextseq']);
    fs.writeFileSync(q.seqfilePath, '1\n');
    fs.unlinkSync(`${q.seqfilePath}.lock`);
    expect((await status(q)).problems.map((p) => p.code)).toEqual(['no-lock-file']);
  });

  it('fails on a directory that is not a queue', async () => {
    await expect(queueStatus(Queue.open(path.join(tempDir(), 'nope')))).rejects.toThrow(QueueError);
  });
});
