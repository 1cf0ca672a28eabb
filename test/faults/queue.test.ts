/**
 * Queues under injected faults (the fault file system, harness.ts): each handler of a failed
 * write, fsync, rename, create or unlink in queue-write, Queue.write, prepare and queue-process.
 *
 * Promises checked: a failure is one clear error line and a non-zero exit; nothing is
 * acknowledged that is not durable, and nothing unacknowledged stays behind (no job, no
 * temporary file, no number used up); queue-process never runs twice a job it recorded as done,
 * never skips one, and works again once the fault is gone, with no manual step; a failed fsync is
 * never retried and then trusted (a cut after the run shows what was really durable).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { processQueues } from '../../src/process/many-queues.js';
import { Queue } from '../../src/queue/queue.js';
import { describeIfPresent } from '../gate.js';
import {
  envFor,
  expectOneErrorLine,
  fspl,
  fsplBin,
  isJobName,
  isTempName,
  lines,
  packet,
  type RunResult,
  readLog,
  recorder,
  tempDir,
} from '../reliability/common.js';
import { type FaultRule, type FaultyFs, faultsMissing, mountFaulty } from './harness.js';

const jobsIn = (q: string) => fs.readdirSync(path.join(q, 'jobs')).filter(isJobName);
const tempsIn = (q: string) =>
  fs.readdirSync(path.join(q, 'jobs')).filter(isTempName).concat(fs.readdirSync(q).filter(isTempName));
const nextseq = (q: string) => fs.readFileSync(path.join(q, 'nextseq'), 'utf8');

describeIfPresent('queues under injected faults', faultsMissing(), { what: 'fault-injection tests' }, () => {
  let ffs: FaultyFs;
  let q: string;
  let outside: string;
  let log: string;
  let cmd: string;
  beforeAll(async () => {
    ffs = await mountFaulty();
  });
  afterAll(async () => {
    await ffs?.unmount();
  });
  beforeEach(async () => {
    await ffs.clear();
    for (const n of fs.readdirSync(ffs.root)) fs.rmSync(path.join(ffs.root, n), { recursive: true, force: true });
    q = path.join(ffs.root, 'q');
    Queue.init(q);
    await ffs.sync();
    outside = tempDir();
    log = path.join(outside, 'log');
    cmd = recorder(outside, log);
  });
  const fault = (rule: Omit<FaultRule, 'when'> & { when?: FaultRule['when'] }) =>
    ffs.fault({ when: { nth: 1 }, ...rule });

  // ---------- writing jobs ----------

  test(
    'queue-write: jobs/ can not be fsynced after the rename: an error, ' +
      'and the unacknowledged job is taken back (a retry does not double it)',
    async () => {
      await fault({ op: 'fsync', error: 'EIO', path: '/q/jobs' });
      const r = await fspl(['queue-write', '-q', q], { stdin: packet(1) });
      expectOneErrorLine(r, /^Error: Input\/output error: .*\/q\/jobs$/, 'queue-write');
      expect(jobsIn(q), 'a job the writer was told failed').toEqual([]);
      expect(tempsIn(q)).toEqual([]);
      const again = await fspl(['queue-write', '-q', q], { stdin: packet(1) });
      expect(again.code, again.stderr).toBe(0);
      expect(jobsIn(q)).toHaveLength(1);
    },
  );

  test('Queue.write (the library, a stream): jobs/ can not be fsynced: it rejects, and no job is left', async () => {
    await fault({ op: 'fsync', error: 'EIO', path: '/q/jobs' });
    const queue = new Queue(q);
    await expect(queue.write(Buffer.from(packet(1)))).rejects.toMatchObject({ code: 'EIO' });
    expect(jobsIn(q)).toEqual([]);
    expect(tempsIn(q)).toEqual([]);
  });

  test.each([
    { op: 'create', error: 'ENOSPC', words: 'No space left on device' },
    { op: 'write', error: 'ENOSPC', words: 'No space left on device' },
    { op: 'fsync', error: 'EIO', words: 'Input/output error' },
    { op: 'rename', error: 'ENOSPC', words: 'No space left on device' },
  ] as const)(
    'queue-write: $op fails with $error: one line naming jobs/, nothing left, a retry works',
    async ({ op, error, words }) => {
      await fault({ op, error, path: '/q/jobs/*' });
      const r = await fspl(['queue-write', '-q', q], { stdin: packet(1) });
      expectOneErrorLine(r, new RegExp(`^Error: ${words.replace('/', '\\/')}: .*/q/jobs(/.*)?$`), 'queue-write');
      expect(jobsIn(q)).toEqual([]);
      expect(tempsIn(q)).toEqual([]);
      expect((await fspl(['queue-write', '-q', q], { stdin: packet(1) })).code).toBe(0);
      expect(jobsIn(q)).toHaveLength(1);
    },
  );

  // ---------- prepare's sequence file ----------

  test(
    "prepare -s: the seqfile's directory can not be fsynced " +
      'after the rename: an error, and the number is not used up',
    async () => {
      const sf = path.join(ffs.root, 'sender.seq');
      fs.writeFileSync(sf, '5\n');
      await ffs.sync();
      await fault({ op: 'fsync', error: 'EIO', path: '/' });
      const r = await fspl(['prepare-nop', '-s', sf]);
      expectOneErrorLine(r, /^Error: Input\/output error: .*\/sender\.seq$/, 'prepare-nop');
      expect(r.stdout.length, 'no packet').toBe(0);
      expect(fs.readFileSync(sf, 'utf8'), 'number 5 is still the next').toBe('5\n');
      const again = await fspl(['prepare-nop', '-s', sf]);
      expect(again.code, again.stderr).toBe(0);
      expect(fs.readFileSync(sf, 'utf8')).toBe('6\n');
    },
  );

  test(
    'prepare -s: the packet can not be written out (a full disk under ' +
      'stdout): an error naming stdout, and the number is given back',
    async () => {
      const sf = path.join(outside, 'sender.seq');
      fs.writeFileSync(sf, '5\n');
      const out = path.join(ffs.root, 'packet');
      const input = path.join(outside, 'payload');
      fs.writeFileSync(input, Buffer.alloc(256 * 1024, 0x61));
      await fault({ op: 'write', error: 'ENOSPC', path: '/packet' });
      const fd = fs.openSync(out, 'w');
      let r: RunResult;
      try {
        const p = spawnSync(process.execPath, [fsplBin(), 'prepare', '-s', sf, '-i', input, '--', 'true'], {
          stdio: ['ignore', fd, 'pipe'],
          env: envFor(),
          encoding: 'utf8',
        });
        r = { code: p.status, signal: p.signal, stdout: Buffer.alloc(0), stderr: p.stderr, timedOut: false };
      } finally {
        fs.closeSync(fd);
      }
      expectOneErrorLine(r, /^Error: No space left on device: standard output$/, 'prepare');
      expect(fs.readFileSync(sf, 'utf8'), 'number 5 given back').toBe('5\n');
    },
  );

  // ---------- queue-process ----------

  test.each([
    { op: 'create', error: 'ENOSPC', path: '/q/nextseq.temp', words: 'No space left on device' },
    { op: 'fsync', error: 'EIO', path: '/q/nextseq.temp', words: 'Input/output error' },
    { op: 'rename', error: 'ENOSPC', path: '/q/nextseq', words: 'No space left on device' },
  ] as const)(
    'queue-process: nextseq can not be written ($op, $error): the pass ' +
      'stops with one line; once the fault is gone the job is not run again',
    async ({ op, error, path: p, words }) => {
      Queue.open(q).writeBuffer(packet(1));
      Queue.open(q).writeBuffer(packet(2));
      await fault({ op, error, path: p });
      const r = await fspl(['queue-process', '-q', q, cmd]);
      expectOneErrorLine(r, new RegExp(`^Error: ${words.replace('/', '\\/')}: .*/q/nextseq$`), 'queue-process');
      expect(readLog(log), 'job 2 is not run past the failure').toEqual([1]);
      expect(tempsIn(q)).toEqual([]);
      await ffs.clear();
      const again = await fspl(['queue-process', '-q', q, cmd]);
      expect(again.code, again.stderr).toBe(0);
      expect(readLog(log), 'job 1 was recorded as done (its note): not run twice').toEqual([1, 2]);
      expect(nextseq(q)).toBe('3\n');
      expect(jobsIn(q)).toEqual([]);
    },
  );

  test(
    'queue-process: the job file can not be removed (EIO): the pass ' +
      'stops with one line naming it; later it is removed, not run again',
    async () => {
      const file = Queue.open(q).writeBuffer(packet(1));
      Queue.open(q).writeBuffer(packet(2));
      await fault({ op: 'unlink', error: 'EIO', path: `/q/jobs/${file}` });
      const r = await fspl(['queue-process', '-q', q, cmd]);
      expectOneErrorLine(r, new RegExp(`^Error: Input/output error: .*/q/jobs/${file}$`), 'queue-process');
      expect(readLog(log)).toEqual([1]);
      await ffs.clear();
      const again = await fspl(['queue-process', '-q', q, cmd]);
      expect(again.code, again.stderr).toBe(0);
      expect(readLog(log)).toEqual([1, 2]);
      expect(jobsIn(q)).toEqual([]);
    },
  );

  test(
    'queue-process: jobs/ can not be fsynced at the end: an error, and the failed ' +
      'fsync is not retried and trusted (the note that names the deletion stays)',
    async () => {
      const file = Queue.open(q).writeBuffer(packet(1));
      await ffs.sync();
      await fault({ op: 'fsync', error: 'EIO', path: '/q/jobs' });
      const r = await fspl(['queue-process', '-q', q, cmd]);
      expectOneErrorLine(r, /^Error: Input\/output error: .*\/q\/jobs$/, 'queue-process');
      // Emptied only once the deletion is durable; a second fsync after the failed one proves nothing.
      expect(fs.readFileSync(path.join(q, 'nextseq.lock'), 'utf8'), 'the note').toMatch(new RegExp(`^S 1 ${file}\n`));
      await ffs.clear();
      const again = await fspl(['queue-process', '-q', q, cmd]);
      expect(again.code, again.stderr).toBe(0);
      expect(fs.readFileSync(path.join(q, 'nextseq.lock'), 'utf8'), 'the note, once done with').toBe('');
      await ffs.cut();
      const after = await fspl(['queue-process', '-q', q, cmd]);
      expect(after.code, after.stderr).toBe(0);
      expect(readLog(log), 'job 1 ran once').toEqual([1]);
      expect(nextseq(q)).toBe('2\n');
    },
  );

  test(
    "queue-process: the note can't be made durable (fdatasync EIO), then jobs/ can't be " +
      'fsynced either: the record stops at the note, and a cut leaves no spent file below nextseq',
    async () => {
      Queue.open(q).writeBuffer(packet(1));
      await ffs.sync();
      await fault({ op: 'fsync', error: 'EIO', path: '/q/nextseq.lock' });
      await fault({ op: 'fsync', error: 'EIO', path: '/q/jobs' });
      const r = await fspl(['queue-process', '-q', q, cmd]);
      expectOneErrorLine(r, /^Error: Input\/output error: .*\/q\/nextseq\.lock$/, 'queue-process');
      await ffs.cut();
      await ffs.clear();
      const again = await fspl(['queue-process', '-q', q, cmd]);
      expect(again.code, again.stderr).toBe(0);
      expect(jobsIn(q), 'no spent job file below nextseq, with no note to name it').toEqual([]);
      expect(nextseq(q)).toBe('2\n');
      // Its note never durable, job 1 was not recorded as done: it may run again (at-least-once).
      expect(readLog(log)).toEqual([1, 1]);
    },
  );

  test(
    "queue-process: the queue directory can not be fsynced after nextseq's rename: " +
      'the next run makes nextseq durable again (a cut does not bring job 1 back)',
    async () => {
      Queue.open(q).writeBuffer(packet(1));
      await ffs.sync();
      await fault({ op: 'fsync', error: 'EIO', path: '/q' });
      const r = await fspl(['queue-process', '-q', q, cmd]);
      expectOneErrorLine(r, /^Error: Input\/output error: .*\/q\/nextseq$/, 'queue-process');
      await ffs.clear();
      const again = await fspl(['queue-process', '-q', q, cmd]);
      expect(again.code, again.stderr).toBe(0);
      await ffs.cut();
      const after = await fspl(['queue-process', '-q', q, cmd]);
      expect(after.code, after.stderr).toBe(0);
      expect(readLog(log), 'job 1 ran once').toEqual([1]);
      expect(nextseq(q)).toBe('2\n');
      expect(jobsIn(q)).toEqual([]);
    },
  );

  test(
    'queue-process with many queues: one queue hits the fault and stops with its ' +
      'error, the other finishes; later the first resumes without running a job twice',
    async () => {
      const q2 = path.join(ffs.root, 'q2');
      Queue.init(q2);
      Queue.open(q).writeBuffer(packet(1));
      Queue.open(q2).writeBuffer(packet(1));
      await fault({ op: 'rename', error: 'ENOSPC', path: '/q/nextseq' });
      const r = await fspl(['queue-process', '-q', q, '-q', q2, cmd]);
      expect(r.code, r.stderr).toBe(1);
      expect(lines(r.stderr).filter((l) => /^Error/.test(l))).toEqual([
        expect.stringMatching(/^Error: queue ".*\/q" stopped: No space left on device: .*\/q\/nextseq$/),
      ]);
      expect(nextseq(q2)).toBe('2\n');
      expect(jobsIn(q2)).toEqual([]);
      await ffs.clear();
      const again = await fspl(['queue-process', '-q', q, '-q', q2, cmd]);
      expect(again.code, again.stderr).toBe(0);
      expect(readLog(log), 'two jobs (one a queue), each run once').toEqual([1, 1]);
      expect(nextseq(q)).toBe('2\n');
      expect(jobsIn(q)).toEqual([]);
    },
  );

  test(
    'queue-process --watch with many queues: a queue stopped by a ' +
      'full disk resumes by itself once there is room (no new job needed)',
    async () => {
      const q2 = path.join(ffs.root, 'q2');
      Queue.init(q2);
      Queue.open(q).writeBuffer(packet(1));
      await fault({ op: 'rename', error: 'ENOSPC', when: 'always', path: '/q/nextseq' });
      const stopped: string[] = [];
      const ran: string[] = [];
      const abort = new AbortController();
      const done = processQueues([q, q2], {
        watch: true,
        run: async (job) => void ran.push(String(job.seq)),
        signal: abort.signal,
        onEvent: (e) => {
          if (e.type === 'stopped') stopped.push(String((e.error as NodeJS.ErrnoException).code));
        },
      });
      try {
        await waitUntil(() => stopped.length > 0, 10_000, 'the queue to stop');
        expect(stopped[0]).toBe('ENOSPC');
        await ffs.clear(); // room again: nothing else changes
        await waitUntil(() => nextseq(q) === '2\n', 10_000, 'the queue to resume by itself');
        expect(ran, 'job 1 ran once: recorded as done by its note, then completed').toEqual(['1']);
        expect(jobsIn(q)).toEqual([]);
      } finally {
        abort.abort();
      }
      const summary = await done;
      expect(
        summary.queues.map((r) => r.state),
        'resumed: no longer stopped',
      ).toEqual(['done', 'done']);
    },
  );
});

async function waitUntil(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
