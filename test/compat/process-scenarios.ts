/**
 * queue-process scenarios, shared by the "built by the reference" and "built by us" suites: a
 * queue is built once by one implementation, copied (cp -a, so job file names are identical),
 * then processed by each implementation; the executor log, stdout, the executor's stderr lines
 * and the queue directory afterwards must be the same.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  arrangeReaddirNotSorted,
  buildQueue,
  describeCompat,
  expectSameState,
  type Impl,
  type JobSpec,
  type ProcessState,
  runOnCopies,
  tmpDir,
  tmpDirForSuite,
} from './harness.js';

const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

/** The queues, by name: jobs and the initial nextseq. */
const QUEUES: Record<string, { jobs: JobSpec[]; nextseq?: number }> = {
  // Everything that can happen to a job, in sequence 1..5.
  mixed: {
    jobs: [
      { seq: 1, params: ['jp1', 'jp 2'], env: { FOO: 'bar', ZED: 'z' }, payload: 'payload one\n' },
      { seq: 2, kind: 'nop' },
      { seq: 3, env: { EXIT: '3' }, payload: binary },
      { seq: 4, kind: 'fail' },
      { seq: 5, payload: 'five', env: { A: 'a' } },
    ],
  },
  // Jobs that all succeed.
  ok: {
    jobs: [
      { seq: 1, payload: 'first\n' },
      { seq: 2, params: ['x', 'y y'], env: { MULTI: 'l1\nl2' }, payload: binary },
      { seq: 3, kind: 'nop' },
    ],
  },
  // A command that sleeps (for --timeout), then an ordinary one.
  timeout: {
    jobs: [
      { seq: 1, env: { SLEEP: '20' }, payload: 'sleepy' },
      { seq: 2, payload: 'after' },
    ],
  },
  // Sequence numbers out of ctime order; 3 and 4 share a ctime; 7 leaves a gap.
  timestamp: {
    jobs: [
      { seq: 1, time: '2030-01-03 00:00:00', payload: 'one' },
      { seq: 2, time: '2030-01-01 00:00:00', payload: 'two' },
      { seq: 3, time: '2030-01-02 00:00:00', payload: 'three' },
      { seq: 4, time: '2030-01-02 00:00:00', payload: 'four' },
      { seq: 7, time: '2029-12-31 23:59:59', kind: 'fail' },
      { seq: 9, time: '2029-12-31 00:00:00', payload: 'nine' },
    ],
  },
  gaps: {
    jobs: [
      { seq: 1, payload: 'a' },
      { seq: 2, payload: 'b' },
      { seq: 4, payload: 'd' },
    ],
  },
  // Jobs below nextseq are ignored.
  below: {
    jobs: [
      { seq: 0, payload: 'zero' },
      { seq: 2, payload: 'two' },
      { seq: 5, payload: 'five' },
      { seq: 6, kind: 'nop' },
    ],
    nextseq: 5,
  },
  // Two files with sequence number 1.
  dups: {
    jobs: [
      { seq: 1, payload: 'first copy', time: '2030-01-02 00:00:01' },
      { seq: 1, payload: 'second copy', time: '2030-01-02 00:00:02' },
      { seq: 2, payload: 'two', time: '2030-01-02 00:00:00' },
    ],
  },
};

/** What the reference is expected to do (a guard against scenarios that test nothing). */
interface RefExpectation {
  code: number;
  nextseq?: string;
  /** How many times the executor ran. */
  ran?: number;
  /** How many job files (fspl-*.fspl) are left. */
  left?: number;
}

interface Scenario {
  name: string;
  queue: keyof typeof QUEUES;
  args: string[];
  stdin?: Buffer;
  nextseq?: number | string;
  setup?: (qdir: string) => void;
  ref: RefExpectation;
}

const Q = ['queue-process', '-q', 'q'];

const SCENARIOS: Scenario[] = [
  {
    name: 'default options, all jobs succeed',
    queue: 'ok',
    args: [...Q, 'EXEC'],
    ref: { code: 0, nextseq: '4\n', ran: 2, left: 0 },
  },
  {
    name: '-q q/ (trailing slash): FSPL_JOB_QUEUEDIR and FSPL_JOB_FULLPATH verbatim; SaveBoth',
    queue: 'ok',
    args: ['queue-process', '--queuedir=q/', '--output-to', 'SaveBoth', 'EXEC'],
    ref: { code: 0, nextseq: '4\n', ran: 2, left: 0 },
  },
  {
    name: '--never-delete',
    queue: 'ok',
    args: [...Q, '--never-delete', 'EXEC'],
    ref: { code: 0, nextseq: '4\n', ran: 2, left: 3 },
  },
  {
    name: 'default (Retry): a failing command stops processing',
    queue: 'mixed',
    args: [...Q, 'EXEC'],
    ref: { code: 1, nextseq: '3\n', ran: 2, left: 3 },
  },
  {
    name: '--on-error RETRY (upper case)',
    queue: 'mixed',
    args: [...Q, '--on-error', 'RETRY', 'EXEC'],
    ref: { code: 1, nextseq: '3\n', ran: 2, left: 3 },
  },
  {
    name: '--on-error Retry with a Fail packet next',
    queue: 'mixed',
    nextseq: 4,
    args: [...Q, '--on-error', 'Retry', 'EXEC'],
    ref: { code: 1, nextseq: '4\n', ran: 0, left: 5 },
  },
  {
    name: '--on-error Delete',
    queue: 'mixed',
    args: [...Q, '--on-error', 'Delete', 'EXEC'],
    ref: { code: 0, nextseq: '6\n', ran: 3, left: 0 },
  },
  {
    name: '--on-error leave (lower case)',
    queue: 'mixed',
    args: [...Q, '--on-error', 'leave', 'EXEC'],
    ref: { code: 0, nextseq: '6\n', ran: 3, left: 2 },
  },
  {
    name: '--on-error Leave with a Fail packet next',
    queue: 'mixed',
    nextseq: 4,
    args: [...Q, '--on-error', 'Leave', 'EXEC'],
    ref: { code: 0, nextseq: '6\n', ran: 1, left: 4 },
  },
  {
    name: '--on-error Delete --never-delete',
    queue: 'mixed',
    args: [...Q, '--on-error', 'Delete', '--never-delete', 'EXEC'],
    ref: { code: 0, nextseq: '6\n', ran: 3, left: 5 },
  },
  { name: '-n 1', queue: 'mixed', args: [...Q, '-n', '1', 'EXEC'], ref: { code: 0, nextseq: '2\n', ran: 1, left: 4 } },
  {
    name: '-n 1 with a NOP next',
    queue: 'mixed',
    nextseq: 2,
    args: [...Q, '-n', '1', 'EXEC'],
    ref: { code: 0, nextseq: '3\n', ran: 0, left: 4 },
  },
  { name: '-n 0', queue: 'mixed', args: [...Q, '-n', '0', 'EXEC'], ref: { code: 0, nextseq: '1\n', ran: 0, left: 5 } },
  {
    name: '-n 4 --on-error delete (failures count)',
    queue: 'mixed',
    args: [...Q, '--maxjobs', '4', '--on-error', 'delete', 'EXEC'],
    ref: { code: 0, nextseq: '5\n', ran: 2, left: 1 },
  },
  {
    name: '--output-to SaveBoth --on-error Leave',
    queue: 'mixed',
    args: [...Q, '--output-to', 'SaveBoth', '--on-error', 'Leave', 'EXEC'],
    ref: { code: 0, nextseq: '6\n', ran: 3, left: 2 },
  },
  {
    name: '--output-to saveboth, a second run truncates the .out file',
    queue: 'ok',
    args: [...Q, '--output-to', 'saveboth', '--never-delete', 'EXEC'],
    setup: (q) => {
      for (const f of fs.readdirSync(path.join(q, 'jobs')))
        fs.writeFileSync(path.join(q, 'jobs', `${f}.out`), 'old output that must go away\n'.repeat(20));
    },
    ref: { code: 0, nextseq: '4\n', ran: 2, left: 3 },
  },
  {
    name: '--allow-job-params, with CLI params',
    queue: 'mixed',
    args: [...Q, '--allow-job-params', '--on-error', 'delete', 'EXEC', '--', 'cli1', 'cli 2', ''],
    ref: { code: 0, nextseq: '6\n', ran: 3, left: 0 },
  },
  {
    name: 'without --allow-job-params, a job with params (params exported, not passed)',
    queue: 'mixed',
    args: [...Q, '-n', '1', 'EXEC', '--', 'cli'],
    ref: { code: 0, nextseq: '2\n', ran: 1, left: 4 },
  },
  {
    name: '--ignore-payload: the command reads our stdin',
    queue: 'mixed',
    stdin: Buffer.from('this is the stdin of fspl itself\n'),
    args: [...Q, '--ignore-payload', '--on-error', 'Delete', 'EXEC'],
    ref: { code: 0, nextseq: '6\n', ran: 3, left: 0 },
  },
  {
    name: '--timeout 1 with a sleeping command (Retry)',
    queue: 'timeout',
    args: [...Q, '--timeout', '1', 'EXEC'],
    ref: { code: 1, nextseq: '1\n', ran: 1, left: 2 },
  },
  {
    name: '--timeout 1 with a sleeping command, --on-error Delete',
    queue: 'timeout',
    args: [...Q, '--timeout', '1', '--on-error', 'Delete', 'EXEC'],
    ref: { code: 0, nextseq: '3\n', ran: 2, left: 0 },
  },
  {
    name: '--order-by Timestamp: ctime order, nextseq untouched, Retry stops at the Fail packet',
    queue: 'timestamp',
    args: [...Q, '--order-by', 'Timestamp', 'EXEC'],
    ref: { code: 1, nextseq: '1\n', ran: 1, left: 5 },
  },
  {
    name: '--order-by timestamp --on-error delete: every job, ties in directory order',
    queue: 'timestamp',
    args: [...Q, '--order-by', 'timestamp', '--on-error', 'delete', 'EXEC'],
    ref: { code: 0, nextseq: '1\n', ran: 5, left: 0 },
  },
  {
    name: '--order-by TIMESTAMP -n 3 --on-error leave, nextseq 42',
    queue: 'timestamp',
    nextseq: 42,
    args: [...Q, '--order-by', 'TIMESTAMP', '-n', '3', '--on-error', 'leave', 'EXEC'],
    ref: { code: 0, nextseq: '42\n', ran: 2, left: 4 },
  },
  {
    name: '--order-by Sequence on the same queue (stops at the gap)',
    queue: 'timestamp',
    args: [...Q, '--order-by', 'Sequence', 'EXEC'],
    ref: { code: 0, nextseq: '5\n', ran: 4, left: 2 },
  },
  {
    name: 'gaps: seqs 1, 2, 4',
    queue: 'gaps',
    args: [...Q, 'EXEC'],
    ref: { code: 0, nextseq: '3\n', ran: 2, left: 1 },
  },
  {
    name: 'gaps: after queue-set-next past the gap',
    queue: 'gaps',
    nextseq: 4,
    args: [...Q, 'EXEC'],
    ref: { code: 0, nextseq: '5\n', ran: 1, left: 2 },
  },
  {
    name: 'jobs below nextseq are ignored',
    queue: 'below',
    args: [...Q, 'EXEC'],
    ref: { code: 0, nextseq: '7\n', ran: 1, left: 2 },
  },
  {
    name: 'duplicate seqs: sequence order fails',
    queue: 'dups',
    args: [...Q, 'EXEC'],
    ref: { code: 1, nextseq: '1\n', ran: 0, left: 3 },
  },
  {
    name: 'duplicate seqs: sequence order fails even with -n 0',
    queue: 'dups',
    args: [...Q, '-n', '0', 'EXEC'],
    ref: { code: 1, nextseq: '1\n', ran: 0, left: 3 },
  },
  {
    name: 'duplicate seqs below nextseq: sequence order still fails',
    queue: 'dups',
    nextseq: 3,
    args: [...Q, '--on-error', 'delete', 'EXEC'],
    ref: { code: 1, nextseq: '3\n', ran: 0, left: 3 },
  },
  {
    name: 'duplicate seqs: timestamp order runs them all',
    queue: 'dups',
    args: [...Q, '--order-by', 'timestamp', 'EXEC'],
    ref: { code: 0, nextseq: '1\n', ran: 3, left: 0 },
  },
  {
    name: 'a command that does not exist: exit 1, job kept, nextseq unchanged, even with --on-error delete',
    queue: 'ok',
    args: [...Q, '--on-error', 'delete', '/nonexistent/command'],
    ref: { code: 1, nextseq: '1\n', ran: 0, left: 3 },
  },
  {
    name: 'a command not found on PATH, --on-error leave --output-to saveboth (.out still created)',
    queue: 'ok',
    args: [...Q, '--on-error', 'leave', '--output-to', 'saveboth', 'no-such-command-fspl-compat'],
    ref: { code: 1, nextseq: '1\n', ran: 0, left: 3 },
  },
  {
    name: 'a command that is not executable: exit 1, nothing changes',
    queue: 'ok',
    args: [...Q, '--on-error', 'Delete', 'NOEXEC'],
    ref: { code: 1, nextseq: '1\n', ran: 0, left: 3 },
  },
  {
    name: 'a NOP first, then a command that does not exist (the NOP is processed)',
    queue: 'mixed',
    nextseq: 2,
    args: [...Q, '--on-error', 'delete', '/nonexistent/command'],
    ref: { code: 1, nextseq: '3\n', ran: 0, left: 4 },
  },
];

function countRuns(log: string): number {
  return log.split('\n').filter((l) => l === '=== job').length;
}

function checkRef(ref: ProcessState & { stderr: string }, want: RefExpectation, what: string): void {
  const ctx = `${what}: the reference did not behave as this test expects (test bug?); stderr: ${ref.stderr}`;
  expect(ref.code, ctx).toBe(want.code);
  if (want.nextseq !== undefined)
    expect(
      ref.queue.nextseq?.endsWith(` ${JSON.stringify(want.nextseq)}`),
      `${ctx}; nextseq ${ref.queue.nextseq}`,
    ).toBe(true);
  if (want.ran !== undefined) expect(countRuns(ref.log), ctx).toBe(want.ran);
  if (want.left !== undefined)
    expect(Object.keys(ref.queue).filter((k) => /^jobs\/fspl-.*\.fspl$/.test(k)).length, ctx).toBe(want.left);
}

/** Define the scenario suite for queues built by `builder`. */
export function defineProcessSuite(builder: Impl): void {
  describeCompat(`queue-process on queues built by ${builder === 'ref' ? 'the reference' : 'us'}`, () => {
    let root: string;
    const built: Record<string, string> = {};

    beforeAll(async () => {
      root = tmpDirForSuite();
      await Promise.all(
        Object.entries(QUEUES).map(async ([name, q]) => {
          const dir = path.join(root, name);
          await buildQueue(builder, dir, q.jobs, { nextseq: q.nextseq });
          built[name] = dir;
        }),
      );
    });
    afterAll(() => {
      if (root) fs.rmSync(root, { recursive: true, force: true });
    });

    for (const sc of SCENARIOS) {
      test(sc.name, async () => {
        const dir = tmpDir();
        const noexec = path.join(dir, 'noexec.sh');
        fs.writeFileSync(noexec, '#!/bin/sh\nexit 0\n', { mode: 0o644 });
        const args = sc.args.map((a) => (a === 'NOEXEC' ? noexec : a));
        const setup = (q: string) => {
          sc.setup?.(q);
          // Ties (same ctime in `timestamp`, same seq in `dups`) are broken in readdir order by the
          // reference; make that order differ from name order in each copy so the tests can tell.
          // (Done on the copies: `cp -a` may not keep the order, e.g. on tmpfs.)
          const jobs = path.join(q, 'jobs');
          if (sc.queue === 'timestamp')
            arrangeReaddirNotSorted(jobs, (c) => /(three|four)$/.test(c.toString('latin1')));
          if (sc.queue === 'dups') arrangeReaddirNotSorted(jobs, (c) => c.toString('latin1').endsWith(' copy'));
        };
        const s = await runOnCopies(built[sc.queue]!, dir, args, { stdin: sc.stdin, nextseq: sc.nextseq, setup });
        checkRef(s.ref, sc.ref, sc.name);
        expectSameState(s, `${sc.name} (${args.join(' ')})`);
      });
    }
  });
}
