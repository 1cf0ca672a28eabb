/**
 * Headers have a bounded cost (security issue 38, item 3): a job file whose header claims more
 * metadata than the limit (--max-header-size, default 8 MiB) is never read, so one such file can
 * neither exhaust memory nor stop the jobs before its number; and a job whose own variables or
 * parameters are more than exec takes fails in one clear line, never with E2BIG.
 *
 * Promise checked: with a 210 MB header at number 999 beside job 1, queue-process runs job 1 and
 * queue-ls lists it, each under 200 MiB of RSS, each warning once about the file; queue-status
 * names the file, its size and the limit, and says why the queue waits once nextseq reaches 999.
 * Raising the limit reads such a file again. A job with a 200 KB variable fails as its on-error
 * says (retry: exit 1, nothing moves; delete: removed, the next job runs).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { crc32, encodeHeader } from '../../src/packet/codec.js';
import { Queue } from '../../src/queue/queue.js';
import {
  envFor,
  expectOneErrorLine,
  fspl,
  fsplBin,
  header,
  isJobName,
  lines,
  packet,
  readLog,
  recorder,
  tempDir,
} from './common.js';

const TIME = '/usr/bin/time';
const MiB = 1024 * 1024;
const BIG_FILE = 'fspl-00000000-0000-4000-8000-000000000999.fspl';

/**
 * A job file whose prefix claims `metadataLength` bytes of metadata, beginning `{seq: SEQ` and
 * then zeros: sparse (quick to make), as large as it claims. Over the limit it is never read.
 */
function claimingFile(qdir: string, metadataLength: number, seq: number, name = BIG_FILE): string {
  const prefix = Buffer.alloc(30);
  prefix.write('*FILESPOOLER', 0, 'ascii');
  prefix.writeUInt16BE(1, 12);
  prefix.writeBigUInt64BE(BigInt(metadataLength), 14);
  prefix.writeUInt32BE(crc32(prefix.subarray(0, 26)), 26);
  const meta = Buffer.from([0x83, 0xa3, 0x73, 0x65, 0x71, 0xcd, seq >> 8, seq & 0xff]);
  const file = path.join(qdir, 'jobs', name);
  fs.writeFileSync(file, Buffer.concat([prefix, meta]));
  fs.truncateSync(file, 30 + metadataLength);
  return file;
}

/** Run our CLI under /usr/bin/time: its result, and its peak RSS in KiB. */
function timed(args: string[]): { code: number | null; stdout: string; stderr: string; maxRssKiB: number } {
  const r = spawnSync(TIME, ['-f', 'MAXRSS %M', process.execPath, fsplBin(), ...args], {
    env: envFor(),
    encoding: 'utf8',
    timeout: 30_000,
  });
  const all = lines(r.stderr);
  const rss = all.filter((l) => l.startsWith('MAXRSS ')).pop();
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: all.filter((l) => l !== rss).join('\n'),
    maxRssKiB: Number(rss?.slice(7)),
  };
}

function setup(): { dir: string; qdir: string; log: string; cmd: string } {
  const dir = tempDir();
  const qdir = path.join(dir, 'q');
  Queue.init(qdir).writeBuffer(packet(1));
  const log = path.join(dir, 'log');
  return { dir, qdir, log, cmd: recorder(dir, log) };
}

const warnings = (stderr: string) => lines(stderr).filter((l) => l.includes(BIG_FILE));

describe('a header over the limit', () => {
  test.skipIf(!fs.existsSync(TIME))(
    'a 210 MB header at 999 beside job 1: job 1 runs, queue-ls and queue-process stay under 200 MiB',
    () => {
      const { qdir, log, cmd } = setup();
      claimingFile(qdir, 210_000_000, 999);
      const ls = timed(['queue-ls', '-q', qdir]);
      expect(ls.code, ls.stderr).toBe(0);
      expect(
        lines(ls.stdout)
          .slice(1)
          .map((l) => l.split(/ +/)[0]),
      ).toEqual(['1']);
      expect(warnings(ls.stderr)).toEqual([expect.stringMatching(/over the limit of 8388608 .*claims number 999/)]);
      expect(ls.maxRssKiB).toBeLessThan(200 * 1024);

      const run = timed(['queue-process', '-q', qdir, cmd]);
      expect(run.code, run.stderr).toBe(0);
      expect(readLog(log)).toEqual([1]);
      expect(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8').trim()).toBe('2');
      expect(warnings(run.stderr)).toHaveLength(1);
      expect(run.maxRssKiB).toBeLessThan(200 * 1024);
      expect(fs.readdirSync(path.join(qdir, 'jobs'))).toEqual([BIG_FILE]); // never lost
    },
  );

  test(
    'queue-status names the file, its size, the limit and ' + 'what it claims; at its number, why the queue waits',
    async () => {
      const { qdir } = setup();
      claimingFile(qdir, 210_000_000, 999);
      const ready = await fspl(['queue-status', '-q', qdir]);
      expect(ready.code, ready.stderr).toBe(0);
      const text = ready.stdout.toString();
      expect(text).toMatch(/^too large: +1 \(headers over 8388608 bytes, not read\)$/m);
      expect(text).toContain(
        `too large ${BIG_FILE} (210000030 bytes): its header metadata is 210000000 bytes, over the limit of 8388608`,
      );
      expect(text).toContain('it claims number 999');

      Queue.open(qdir).setNext(999n);
      const stuck = await fspl(['queue-status', '-q', qdir, '--json']);
      expect(stuck.code, stuck.stderr).toBe(3);
      const doc = JSON.parse(stuck.stdout.toString());
      expect(doc.problems.map((p: { code: string }) => p.code)).toEqual(['next-too-large']);
      expect(doc.problems[0].message).toMatch(/raise --max-header-size/);
      expect(doc.too_large).toEqual([
        { filename: BIG_FILE, size: 210_000_030, metadata_length: '210000000', limit: 8 * MiB, claimed_seq: '999' },
      ]);

      // queue-process waits, as for a missing job: nothing runs, nothing moves, one warning.
      const run = await fspl(['queue-process', '-q', qdir, 'true']);
      expect(run.code, run.stderr).toBe(0);
      expect(warnings(run.stderr)).toHaveLength(1);
      expect(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8').trim()).toBe('999');
      expect(fs.readdirSync(path.join(qdir, 'jobs')).filter(isJobName)).toHaveLength(2);
    },
  );

  test(
    '--max-header-size (or FSPL_MAX_HEADER_SIZE) sets the ' +
      'limit: a 2 KiB header is skipped under 1K, read again above',
    async () => {
      const { qdir, log, cmd } = setup();
      const env = Array.from(
        { length: 8 },
        (_, i) => [Buffer.from(`V${i}`), Buffer.alloc(250, 0x61)] as [Buffer, Buffer],
      );
      const big = encodeHeader(header(2, { kind: 'Command', params: [], env }));
      expect(big.length).toBeGreaterThan(2048);
      Queue.open(qdir).writeBuffer(big);

      const low = await fspl(['queue-ls', '-q', qdir, '--max-header-size', '1K']);
      expect(low.code, low.stderr).toBe(0);
      expect(lines(low.stdout.toString())).toHaveLength(2); // the title and job 1
      expect(lines(low.stderr)).toEqual([expect.stringMatching(/WARN .*over the limit of 1024 .*it claims number 2,/)]);
      const status = await fspl(['queue-status', '-q', qdir], { env: { FSPL_MAX_HEADER_SIZE: '1024' } });
      expect(status.stdout.toString()).toMatch(/too large fspl-.*over the limit of 1024.*it claims number 2/);

      const high = await fspl(['queue-ls', '-q', qdir, '--max-header-size', '4096']);
      expect(
        lines(high.stdout.toString())
          .slice(1)
          .map((l) => l.split(/ +/)[0]),
      ).toEqual(['1', '2']);
      expect(high.stderr).toBe('');

      // Under the low limit job 2 waits after job 1; raised, it runs.
      expect((await fspl(['queue-process', '-q', qdir, '--max-header-size', '1024', cmd])).code).toBe(0);
      expect(readLog(log)).toEqual([1]);
      expect((await fspl(['queue-process', '-q', qdir, '--max-header-size', '4K', cmd])).code).toBe(0);
      expect(readLog(log)).toEqual([1, 2]);

      const bad = await fspl(['queue-ls', '-q', qdir, '--max-header-size', 'lots']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/invalid value 'lots' for --max-header-size/);
    },
  );
});

describe('a job whose variables are more than exec takes', () => {
  /** Job 1 with a 200 KB FSPL_SET_X (over the 128 KiB one string may be), job 2 a plain one. */
  function bigEnvQueue(): { qdir: string; log: string; cmd: string } {
    const dir = tempDir();
    const qdir = path.join(dir, 'q');
    const q = Queue.init(qdir);
    q.writeBuffer(
      encodeHeader(header(1, { kind: 'Command', params: [], env: [[Buffer.from('X'), Buffer.alloc(200_000, 0x61)]] })),
    );
    q.writeBuffer(packet(2));
    const log = path.join(dir, 'log');
    return { qdir, log, cmd: recorder(dir, log) };
  }

  test.each([{ native: true }, { native: false }])(
    'fails the job in one clear line, as --on-error says (addon: $native)',
    async ({ native }) => {
      const env: Record<string, string> = native ? {} : { FSPL_NO_NATIVE: '1' };
      const { qdir, log, cmd } = bigEnvQueue();
      const retry = await fspl(['queue-process', '-q', qdir, cmd], { env });
      expectOneErrorLine(
        retry,
        new RegExp(
          /^Error: Job 1 failed \(not run: its environment variable /.source +
            /FSPL_SET_X is 200012 bytes, over the system's 131072-byte limit/.source,
        ),
        'retry',
      );
      expect(lines(retry.stderr).filter((l) => l.includes('ERROR'))).toEqual([
        expect.stringMatching(/Job 1 not run: its environment variable FSPL_SET_X/),
      ]);
      expect(retry.stderr).not.toMatch(/E2BIG|Argument list too long|\n\s+at /);
      expect(readLog(log)).toEqual([]);
      expect(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8').trim()).toBe('1');

      const del = await fspl(['queue-process', '-q', qdir, '--on-error', 'delete', cmd], { env });
      expect(del.code, del.stderr).toBe(0);
      expect(del.stderr).not.toMatch(/E2BIG|Argument list too long/);
      expect(readLog(log)).toEqual([2]);
      expect(fs.readdirSync(path.join(qdir, 'jobs')).filter(isJobName)).toEqual([]);
    },
  );

  test('job parameters too large fail the same way', async () => {
    const dir = tempDir();
    const qdir = path.join(dir, 'q');
    Queue.init(qdir).writeBuffer(
      encodeHeader(header(1, { kind: 'Command', params: [Buffer.alloc(140_000, 0x62)], env: [] })),
    );
    const r = await fspl(['queue-process', '-q', qdir, '--allow-job-params', '--on-error', 'leave', 'true']);
    expect(r.code, r.stderr).toBe(0);
    expect(lines(r.stderr)).toEqual([
      expect.stringMatching(
        /ERROR .*Job 1 not run: its argument 1 is 140001 bytes, over the system's 131072-byte limit for one argument$/,
      ),
    ]);
    expect(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8').trim()).toBe('2');
  });
});
