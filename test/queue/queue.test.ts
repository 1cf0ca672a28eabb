import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DuplicateSeqError,
  encodeHeader,
  isJobFilename,
  NotFoundError,
  type PacketHeader,
  Queue,
  QueueError,
} from '../../src/lowlevel.js';
import { tempDir } from '../helpers.js';

function packet(seq: bigint, payload = '', secs = 1700000000n): Buffer {
  const h: PacketHeader = { seq, ctime: { secs, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } };
  return Buffer.concat([encodeHeader(h), Buffer.from(payload)]);
}

describe('Queue', () => {
  it('init creates the layout; a second init fails; append-only has no nextseq', () => {
    const dir = path.join(tempDir(), 'q');
    Queue.init(dir);
    expect(fs.readFileSync(path.join(dir, 'nextseq'), 'utf8')).toBe('1\n');
    expect(fs.statSync(path.join(dir, 'nextseq.lock')).size).toBe(0);
    expect(fs.statSync(path.join(dir, 'jobs')).isDirectory()).toBe(true);
    expect(() => Queue.init(dir)).toThrow(/EEXIST|exists/);
    const ao = path.join(path.dirname(dir), 'ao');
    Queue.init(ao, { appendOnly: true });
    expect(fs.readdirSync(ao)).toEqual(['jobs']);
    expect(() => Queue.open(ao).getNext()).toThrow(QueueError);
  });

  it('writes jobs under a temporary name and renames them to fspl-UUID.fspl', () => {
    const q = Queue.init(path.join(tempDir(), 'q'));
    const name = q.writeBuffer(packet(1n, 'hi'));
    expect(name).toMatch(/^fspl-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.fspl$/);
    expect(fs.readdirSync(q.jobsDir)).toEqual([name]);
  });

  it('scans job files, skipping names that do not match and files that do not decode', async () => {
    const q = Queue.init(path.join(tempDir(), 'q'));
    q.writeBuffer(packet(2n));
    q.writeBuffer(packet(1n));
    fs.writeFileSync(path.join(q.jobsDir, 'fspl-junk.fspl'), 'junk');
    fs.writeFileSync(path.join(q.jobsDir, 'other.txt'), packet(9n));
    fs.writeFileSync(path.join(q.jobsDir, 'fspl-9.fspl.tmp'), packet(9n));
    fs.mkdirSync(path.join(q.jobsDir, 'fspl-dir.fspl'));
    const jobs = await q.list();
    expect(jobs.map((j) => j.header.seq)).toEqual([1n, 2n]);
    expect(isJobFilename('fspl-.fspl')).toBe(true);
    expect(isJobFilename('FSPL-1.fspl')).toBe(false);
  });

  it('finds by sequence number, with the duplicate rule', async () => {
    const q = Queue.init(path.join(tempDir(), 'q'));
    q.writeBuffer(packet(1n));
    q.writeBuffer(packet(2n));
    expect((await q.find(2n)).header.seq).toBe(2n);
    await expect(q.find(3n)).rejects.toThrow(NotFoundError);
    q.writeBuffer(packet(2n));
    await expect(q.find(1n)).rejects.toThrow(DuplicateSeqError);
    expect((await q.list()).length).toBe(3);
  });

  it('reads gzipped jobs through a decoder, and skips them without one', async () => {
    const q = Queue.init(path.join(tempDir(), 'q'));
    for (const seq of [3n, 1n, 2n]) {
      fs.writeFileSync(
        path.join(q.jobsDir, `fspl-${seq}.fspl`),
        execFileSync('gzip', ['-c'], { input: packet(seq, 'x') }),
      );
    }
    expect(await q.list()).toEqual([]);
    const dq = Queue.open(q.dir, { decoder: 'zcat' });
    expect((await dq.list()).map((j) => j.header.seq)).toEqual([1n, 2n, 3n]);
  });

  it('get/set next', () => {
    const q = Queue.init(path.join(tempDir(), 'q'));
    q.setNext(18446744073709551615n);
    expect(q.getNext()).toBe(18446744073709551615n);
    fs.unlinkSync(q.seqfilePath);
    expect(q.getNext()).toBe(1n); // recreated holding 1, as the reference does
  });
});

/**
 * With and without the addon: the queue lists job 1 alone, and (given a name) that file does not
 * open as a job, failing as `refused` says.
 */
async function listsOnlyJob1(q: Queue, name?: string, refused?: RegExp): Promise<void> {
  const saved = process.env.FSPL_NO_NATIVE;
  try {
    for (const noNative of ['1', '']) {
      process.env.FSPL_NO_NATIVE = noNative;
      expect(
        (await q.list()).map((j) => j.header.seq),
        `FSPL_NO_NATIVE=${noNative}`,
      ).toEqual([1n]);
      if (name) await expect(q.openJob(name), `FSPL_NO_NATIVE=${noNative}`).rejects.toThrow(refused);
    }
  } finally {
    if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
    else process.env.FSPL_NO_NATIVE = saved;
  }
}

describe('a FIFO named like a job', () => {
  it('is skipped by scans (native or not) and diagnosed by queue-status, never waited on', async () => {
    const dir = tempDir();
    const q = Queue.init(path.join(dir, 'q'));
    q.writeBuffer(encodeHeader({ seq: 1n, ctime: { secs: 1n, nanos: 0 }, cmd: { kind: 'NOP' } }));
    execFileSync('mkfifo', [path.join(q.jobsDir, 'fspl-fifo.fspl')]);
    await listsOnlyJob1(q);
    const { queueStatus } = await import('../../src/status/report.js');
    const status = await queueStatus(q);
    expect(status.undecodable.map((u) => u.filename)).toEqual(['fspl-fifo.fspl']);
  });
});

describe('a symbolic link named like a job', () => {
  it('is never followed: not listed, not run (native or not), and queue-status says why', async () => {
    const dir = tempDir();
    const q = Queue.init(path.join(dir, 'q'));
    q.writeBuffer(encodeHeader({ seq: 1n, ctime: { secs: 1n, nanos: 0 }, cmd: { kind: 'NOP' } }));
    // A valid packet that only the processor may read, which a writer of jobs/ points a link at.
    const secret = path.join(dir, 'private.fspl');
    fs.writeFileSync(secret, encodeHeader({ seq: 2n, ctime: { secs: 1n, nanos: 0 }, cmd: { kind: 'NOP' } }), {
      mode: 0o600,
    });
    fs.symlinkSync(secret, path.join(q.jobsDir, 'fspl-link.fspl'));
    await listsOnlyJob1(q, 'fspl-link.fspl', /fspl-link.fspl: it is a symbolic link/);
    const { queueStatus } = await import('../../src/status/report.js');
    const status = await queueStatus(q);
    expect(status.undecodable.map((u) => [u.filename, u.cause])).toEqual([
      ['fspl-link.fspl', expect.stringMatching(/a symbolic link, which is not followed/)],
    ]);
  });
});

describe('a hard link named like a job', () => {
  it(
    'is not read (native or not): another name of a packet only ' +
      'the processor may read is not a job; queue-status says why',
    async () => {
      const dir = tempDir();
      const q = Queue.init(path.join(dir, 'q'));
      q.writeBuffer(encodeHeader({ seq: 1n, ctime: { secs: 1n, nanos: 0 }, cmd: { kind: 'NOP' } }));
      const secret = path.join(dir, 'private.fspl');
      fs.writeFileSync(secret, encodeHeader({ seq: 2n, ctime: { secs: 1n, nanos: 0 }, cmd: { kind: 'NOP' } }), {
        mode: 0o600,
      });
      fs.linkSync(secret, path.join(q.jobsDir, 'fspl-hard.fspl'));
      await listsOnlyJob1(q, 'fspl-hard.fspl', /2 names \(a hard link\)/);
      const { queueStatus } = await import('../../src/status/report.js');
      const status = await queueStatus(q);
      expect(status.undecodable.map((u) => [u.filename, u.cause])).toEqual([
        ['fspl-hard.fspl', expect.stringMatching(/a hard link\), which is not read/)],
      ]);
    },
  );
});
