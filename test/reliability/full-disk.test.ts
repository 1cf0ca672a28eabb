/**
 * Full disk: queues on a small tmpfs (mounted for the test; root only, so skipped with a
 * warning elsewhere and a failure in CI when it can not run).
 *
 * Promise checked: queue-write of a packet larger than the free space, the nextseq update after
 * a job, a prepare that must update its seqfile, and a job whose output goes to jobs/FILE.out
 * each fail with one clear error line and exit status 1, leave no partial job and no temporary
 * file, and do not advance the queue. The reference, run on the same tmpfs, leaves its temporary
 * files behind (recorded, not asserted).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { Queue } from '../../src/queue/queue.js';
import { fillUp } from '../helpers.js';
import {
  describeNeeding,
  expectOneErrorLine,
  fspl,
  HAVE_REF,
  isJobName,
  packet,
  readLog,
  record,
  recorder,
  tempDir,
} from './common.js';

const KiB = 1024;

/** Every file under dir, relative, sorted. */
function tree(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const n of fs.readdirSync(path.join(dir, rel)).sort()) {
    const r = rel ? `${rel}/${n}` : n;
    if (fs.statSync(path.join(dir, r)).isDirectory()) out.push(...tree(dir, r));
    else out.push(r);
  }
  return out;
}
const temps = (dir: string) => tree(dir).filter((f) => /(^|\/)tmp-fspl-.*\.tmp$|\.temp$/.test(f));

/** Fill the file system until not one more byte fits. */
const fill = (dir: string) => fillUp(path.join(dir, 'filler'));

const figures: Record<string, unknown> = {};

describeNeeding('full disk (a small tmpfs)', { root: true, mount: true }, () => {
  let mnt: string;
  let outside: string;
  const mount = (opts: string) => {
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', opts, 'tmpfs', mnt]);
    if (r.status !== 0) throw new Error(`mount: ${r.stderr}`);
  };
  const unmount = () => {
    spawnSync('umount', [mnt]);
  };

  beforeAll(() => {
    mnt = fs.mkdtempSync('/tmp/fspl-rel-tmpfs-');
    mount('size=256k');
  });
  afterAll(() => {
    if (!mnt) return;
    unmount();
    if (spawnSync('mountpoint', ['-q', mnt]).status === 0) spawnSync('umount', ['-l', mnt]);
    fs.rmSync(mnt, { recursive: true, force: true });
    record('full-disk', undefined, figures);
  });
  beforeEach(() => {
    for (const n of fs.readdirSync(mnt)) fs.rmSync(path.join(mnt, n), { recursive: true, force: true });
    outside = tempDir();
  });

  test(
    'queue-write of a packet larger than the free space: ' + 'one error line, no partial job, no temporary file',
    async () => {
      const big = path.join(outside, 'big.fspl');
      fs.writeFileSync(big, packet(1, Buffer.alloc(1024 * KiB, 0x61)));
      const qdir = path.join(mnt, 'q');
      Queue.init(qdir);
      const r = await fspl(['queue-write', '-q', qdir], { stdin: { file: big } });
      expectOneErrorLine(r, /^Error: No space left on device/, 'queue-write');
      expect(fs.readdirSync(path.join(qdir, 'jobs')), 'jobs/ afterwards').toEqual([]);
      // The space is given back: a small job fits again.
      const small = await fspl(['queue-write', '-q', qdir], { stdin: packet(2) });
      expect(small.code, small.stderr).toBe(0);
      expect(temps(mnt)).toEqual([]);
      figures.queueWrite = { exit: r.code, error: r.stderr.trim(), jobFilesLeft: 0, tempFilesLeft: 0 };

      if (HAVE_REF) {
        const rq = path.join(mnt, 'rq');
        Queue.init(rq);
        fs.rmSync(path.join(qdir), { recursive: true });
        const ref = await fspl(['queue-write', '-q', rq], { stdin: { file: big }, impl: 'ref' });
        const left = fs.readdirSync(path.join(rq, 'jobs'));
        figures.queueWriteReference = {
          exit: ref.code,
          error: ref.stderr.trim(),
          jobFilesLeft: left.filter(isJobName).length,
          tempFilesLeft: left.filter((n) => n.startsWith('tmp-fspl-')).length,
          tempBytesLeft: left
            .filter((n) => n.startsWith('tmp-fspl-'))
            .reduce((s, n) => s + fs.statSync(path.join(rq, 'jobs', n)).size, 0),
        };
      }
    },
  );

  test(
    'nextseq can not be updated after a job: one error line, the job ' +
      'kept, nextseq unchanged, no nextseq.temp; the job runs again later',
    async () => {
      const run = async (impl: 'ours' | 'ref') => {
        const qdir = path.join(mnt, impl);
        const q = Queue.init(qdir);
        q.writeBuffer(packet(1));
        const log = path.join(outside, `${impl}.log`);
        const cmd = recorder(outside, log);
        fill(mnt);
        const r = await fspl(['queue-process', '-q', qdir, cmd], { impl });
        const state = {
          exit: r.code,
          error: r.stderr.trim(),
          ranBeforeTheError: readLog(log).length,
          nextseq: fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8').trim(),
          jobFilesKept: fs.readdirSync(q.jobsDir).filter(isJobName).length,
          tempFilesLeft: temps(qdir),
        };
        fs.rmSync(path.join(mnt, 'filler'));
        return { r, state, qdir, log, cmd };
      };
      const ours = await run('ours');
      // The note in nextseq.lock, or nextseq itself: whichever needs the first page the disk lacks.
      expectOneErrorLine(ours.r, /^Error: No space left on device: .*\/ours\/nextseq(\.lock)?$/, 'queue-process');
      expect(ours.state).toMatchObject({ nextseq: '1', jobFilesKept: 1, tempFilesLeft: [] });
      // Space again: the job is run again (at-least-once) and the queue moves on.
      const again = await fspl(['queue-process', '-q', ours.qdir, ours.cmd]);
      expect(again.code, again.stderr).toBe(0);
      expect(readLog(ours.log)).toEqual([1, 1]);
      expect(fs.readFileSync(path.join(ours.qdir, 'nextseq'), 'utf8')).toBe('2\n');
      figures.nextseqUpdate = { ...ours.state, afterSpaceIsFreed: 'job re-run once, nextseq 2' };
      if (HAVE_REF) figures.nextseqUpdateReference = (await run('ref')).state;
    },
  );

  test(
    'prepare can not update its seqfile: one error line, ' +
      'nothing on stdout, the seqfile unchanged, no seqfile.temp',
    async () => {
      const input = path.join(outside, 'input');
      fs.writeFileSync(input, 'payload');
      const run = async (impl: 'ours' | 'ref') => {
        const sf = path.join(mnt, `${impl}.seq`);
        fs.writeFileSync(sf, '5\n');
        fs.writeFileSync(`${sf}.lock`, '');
        fill(mnt);
        const r = await fspl(['prepare', '-s', sf, '-i', input], { impl });
        const state = {
          exit: r.code,
          error: r.stderr.trim(),
          stdoutBytes: r.stdout.length,
          seqfile: fs.readFileSync(sf, 'utf8'),
          tempFilesLeft: fs.readdirSync(mnt).filter((n) => n.startsWith(`${impl}.seq`) && n.endsWith('.temp')),
        };
        fs.rmSync(path.join(mnt, 'filler'));
        return { r, state };
      };
      const ours = await run('ours');
      expectOneErrorLine(ours.r, /^Error: No space left on device: .*\/ours\.seq$/, 'prepare');
      expect(ours.state).toMatchObject({ stdoutBytes: 0, seqfile: '5\n', tempFilesLeft: [] });
      figures.senderSeqfile = ours.state;
      if (HAVE_REF) figures.senderSeqfileReference = (await run('ref')).state;
    },
  );

  test(
    '--output-to saveboth with no room for the output: the job ' +
      'fails (its command could not write), stays, nextseq unchanged',
    async () => {
      const qdir = path.join(mnt, 'q');
      const q = Queue.init(qdir);
      q.writeBuffer(packet(1));
      const log = path.join(outside, 'log');
      // The command writes 1 MiB of output, more than the file system holds, and fails when it can't.
      const cmd = recorder(outside, log, 'head -c 1048576 /dev/zero || exit 1\n');
      const r = await fspl(['queue-process', '-q', qdir, '--output-to', 'saveboth', cmd]);
      expectOneErrorLine(
        r,
        /^Error: Job 1 failed \(command exited with status 1\)/,
        'queue-process --output-to saveboth',
      );
      expect(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8')).toBe('1\n');
      const files = fs.readdirSync(q.jobsDir);
      expect(files.filter(isJobName)).toHaveLength(1);
      expect(temps(mnt)).toEqual([]);
      figures.saveBothOutput = {
        exit: r.code,
        error: r.stderr.trim(),
        ran: readLog(log).length,
        nextseq: 1,
        jobFilesKept: 1,
        outFileBytes: fs.statSync(path.join(q.jobsDir, `${files.find(isJobName)}.out`)).size,
        tempFilesLeft: 0,
      };
    },
  );

  test('no inode left for jobs/FILE.out: one error line and the command never runs', async () => {
    unmount();
    // The root, q, jobs, nextseq, nextseq.lock and one job: six inodes, and no seventh.
    mount('size=256k,nr_inodes=6');
    try {
      const qdir = path.join(mnt, 'q');
      const q = Queue.init(qdir);
      q.writeBuffer(packet(1));
      const log = path.join(outside, 'log');
      const r = await fspl(['queue-process', '-q', qdir, '--output-to', 'saveboth', recorder(outside, log)]);
      expectOneErrorLine(r, /^Error: No space left on device: .*\.out$/, 'queue-process with no inode for .out');
      expect(readLog(log)).toEqual([]);
      expect(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8')).toBe('1\n');
      expect(fs.readdirSync(q.jobsDir).filter(isJobName)).toHaveLength(1);
      figures.saveBothNoInode = { exit: r.code, error: r.stderr.trim(), ran: 0, nextseq: 1, jobFilesKept: 1 };
    } finally {
      unmount();
      mount('size=256k');
    }
  });
});
