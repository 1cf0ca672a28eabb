/**
 * finish.ts: the records of finished jobs and of runs of NOPs, cut short at every step (as a
 * kill -9 would cut them: what ran stays done), then a run of processQueue: nothing is run again
 * but the job a kill could have caught running, nothing is skipped, no spent file is left below
 * nextseq, and the lock file ends empty.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/base/log.js';
import { type CommandType, encodeHeader, processQueue, Queue } from '../../src/lowlevel.js';
import {
  Finisher,
  type FinishRecord,
  GROUP_MAX,
  jobRecord,
  NOP_RUN_MAX,
  nopRunAt,
  nopRunRecord,
} from '../../src/process/finish.js';
import type { JobEntry } from '../../src/queue/jobs.js';
import { runBatchSync } from '../../src/sys/fs-batch.js';
import type { SeqFile } from '../../src/sys/seqfile.js';
import { tempDir } from '../helpers.js';

const NOP: CommandType = { kind: 'NOP' };
const COMMAND: CommandType = { kind: 'Command', params: [], env: [] };

/** A queue holding jobs 1.. of these kinds, and a command that logs the number of each job it runs. */
function queueOf(kinds: CommandType[]) {
  const dir = tempDir();
  const q = Queue.init(path.join(dir, 'q'));
  const log = path.join(dir, 'log');
  kinds.forEach((cmd, i) =>
    q.writeBuffer(encodeHeader({ seq: BigInt(i + 1), ctime: { secs: 1700000000n, nanos: 0 }, cmd })),
  );
  const command = { command: 'sh', params: ['-c', `echo $FSPL_SEQ >> ${log}`] };
  const ran = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map(Number) : []);
  return { q, command, ran };
}

async function bySeq(q: Queue): Promise<Map<bigint, JobEntry>> {
  return new Map((await q.scan()).map((e) => [e.header.seq, e]));
}

type MakeRecord = (bySeq: Map<bigint, JobEntry>) => FinishRecord;

/**
 * Run the first `k` operations of a record (all with k Infinity), under the queue's lock, and
 * leave what they did, as a kill -9 right after them would. Returns how many operations it has.
 */
async function cutAfter(q: Queue, k: number, make: MakeRecord): Promise<number> {
  const record = make(await bySeq(q));
  const sf = q.lockSeqfile();
  try {
    const ops = new Finisher(q, sf, silentLogger).steps(record).steps.flat();
    const results = runBatchSync(ops.slice(0, k));
    expect(
      [...results].filter((r) => r < 0),
      `operation ${k}`,
    ).toEqual([]);
    return ops.length;
  } finally {
    sf.release(); // the note stays in the lock file, as a kill leaves it
  }
}

describe('nopRunAt', () => {
  it('takes the NOPs numbered from next on, up to a command, a gap, the limit or NOP_RUN_MAX', async () => {
    const { q } = queueOf([NOP, NOP, NOP, COMMAND, NOP, NOP]);
    const jobs = await bySeq(q);
    const seqs = (run: JobEntry[]) => run.map((e) => Number(e.header.seq));
    expect(seqs(nopRunAt(jobs, 1n, Infinity))).toEqual([1, 2, 3]);
    expect(seqs(nopRunAt(jobs, 2n, 1))).toEqual([2]);
    expect(seqs(nopRunAt(jobs, 4n, Infinity))).toEqual([]);
    expect(seqs(nopRunAt(jobs, 5n, Infinity))).toEqual([5, 6]);
    jobs.delete(6n);
    expect(seqs(nopRunAt(jobs, 5n, Infinity))).toEqual([5]);
    const many = new Map(
      Array.from({ length: NOP_RUN_MAX + 5 }, (_, i) => [
        BigInt(i + 1),
        { ...jobs.get(1n)!, header: { ...jobs.get(1n)!.header, seq: BigInt(i + 1) } },
      ]),
    );
    expect(nopRunAt(many, 1n, Infinity)).toHaveLength(NOP_RUN_MAX);
  });
});

describe('a record cut short at every step, then the next run', () => {
  it('a run of NOPs: the commands after it run once, every NOP file goes, nextseq ends past all', async () => {
    const kinds = [NOP, NOP, NOP, NOP, COMMAND, NOP, NOP, COMMAND];
    const make: MakeRecord = (jobs) => nopRunRecord(nopRunAt(jobs, 1n, Infinity), true);
    // The note, nextseq.temp written, renamed, the queue directory fsynced, 4 unlinks, jobs/ fsynced.
    const steps = await cutAfter(queueOf(kinds).q, 0, make);
    expect(steps).toBe(9);
    for (let k = 0; k <= steps; k++) {
      const { q, command, ran } = queueOf(kinds);
      await cutAfter(q, k, make);
      const summary = await processQueue(q, command);
      expect(ran(), `cut after operation ${k}`).toEqual([5, 8]);
      expect(fs.readdirSync(q.jobsDir), `cut after operation ${k}`).toEqual([]);
      expect(q.getNext(), `cut after operation ${k}`).toBe(9n);
      expect(fs.readFileSync(path.join(q.dir, 'nextseq.lock'), 'utf8')).toBe('');
      // Before nextseq moved the NOPs are taken again (they run nothing); after, only the rest.
      expect(summary.processed, `cut after operation ${k}`).toBe(k >= 3 ? 4 : 8);
    }
  });

  /**
   * Job 1's record (`last`: the last of its pass) cut after each of its operations, then a run:
   * cut before its note, job 1 was the one running and runs again; after, it is done. Either way
   * no spent file is left and nextseq ends past job 2.
   */
  async function cutJobRecord(last: boolean): Promise<number> {
    const kinds = [COMMAND, COMMAND];
    const make: MakeRecord = (jobs) =>
      jobRecord({ seq: 1n, filename: jobs.get(1n)!.filename, order: 'sequence', remove: true, last });
    const steps = await cutAfter(queueOf(kinds).q, 0, make);
    for (let k = 0; k <= steps; k++) {
      const { q, command, ran } = queueOf(kinds);
      await cutAfter(q, k, make);
      await processQueue(q, command);
      expect(ran(), `cut after operation ${k}`).toEqual(k === 0 ? [1, 2] : [2]);
      expect(fs.readdirSync(q.jobsDir), `cut after operation ${k}`).toEqual([]);
      expect(q.getNext(), `cut after operation ${k}`).toBe(3n);
    }
    return steps;
  }

  it('a job: not run again once its note is written, and its file never left behind', async () => {
    // The note, nextseq.temp written, renamed, the queue directory fsynced, the unlink (jobs/ is
    // fsynced later, once for several jobs).
    expect(await cutJobRecord(false)).toBe(5);
  });

  it('the last job of a pass: its record fsyncs jobs/ too, cut anywhere nothing runs twice or stays', async () => {
    // The five operations of a job's record, then the fsync of jobs/ the run's rest would have made.
    expect(await cutJobRecord(true)).toBe(6);
  });
});

describe('deletions made durable together', () => {
  it(
    'each note names the deletions not yet durable; after ' + 'a power cut brings them back, the next run removes them',
    async () => {
      const n = GROUP_MAX + 3;
      const { q, command, ran } = queueOf(Array.from({ length: n + 1 }, () => COMMAND));
      const jobs = await bySeq(q);
      const copies = new Map([...jobs.values()].map((e) => [e.filename, fs.readFileSync(q.jobPath(e.filename))]));
      const sf = q.lockSeqfile();
      const finisher = new Finisher(q, sf, silentLogger);
      const notes: string[] = [];
      for (let s = 1n; s <= BigInt(n); s++) {
        finisher.finishJob({ seq: s, filename: jobs.get(s)!.filename, order: 'sequence', remove: true });
        notes.push(sf.readNote());
      }
      // Job s's note names its file and the deletions since jobs/ was last fsynced (GROUP_MAX at most).
      expect(notes[0]).toBe(`S 1 ${jobs.get(1n)!.filename}`);
      expect(notes[GROUP_MAX - 1]!.split(' ')).toHaveLength(2 + GROUP_MAX);
      expect(notes[GROUP_MAX]!.split(' ')).toHaveLength(3);
      expect(notes[n - 1]!.split(' ').slice(2)).toEqual(
        [n, ...Array.from({ length: n - 1 - GROUP_MAX }, (_, i) => GROUP_MAX + 1 + i)].map(
          (s) => jobs.get(BigInt(s))!.filename,
        ),
      );
      // A power cut now: the last jobs' deletions were not durable, so their files come back; the
      // run ends without settling (the note stays).
      for (const s of [n, n - 1, n - 2])
        fs.writeFileSync(q.jobPath(jobs.get(BigInt(s))!.filename), copies.get(jobs.get(BigInt(s))!.filename)!);
      sf.release();
      expect(await processQueue(q, command)).toEqual({ processed: 1, succeeded: 1, failed: 0 });
      expect(ran()).toEqual([n + 1]);
      expect(fs.readdirSync(q.jobsDir)).toEqual([]);
      expect(fs.readFileSync(path.join(q.dir, 'nextseq.lock'), 'utf8')).toBe('');
    },
  );

  /** Three jobs, and a Finisher of their queue under its lock (released after `fn`); returns the queue and its jobs. */
  async function withFinisher(
    fn: (finisher: Finisher, sf: SeqFile, jobs: Map<bigint, JobEntry>) => void,
  ): Promise<{ q: Queue; jobs: Map<bigint, JobEntry> }> {
    const { q } = queueOf([COMMAND, COMMAND, COMMAND]);
    const jobs = await bySeq(q);
    const sf = q.lockSeqfile();
    try {
      fn(new Finisher(q, sf, silentLogger), sf, jobs);
    } finally {
      sf.release();
    }
    return { q, jobs };
  }

  it('a last job leaves no deletion waiting: the next note names only its own job', async () => {
    await withFinisher((finisher, sf, jobs) => {
      const job = (seq: bigint, last?: boolean) =>
        ({ seq, filename: jobs.get(seq)!.filename, order: 'sequence', remove: true, last }) as const;
      finisher.finishJob(job(1n));
      finisher.finishJob(job(2n, true));
      expect(sf.readNote()).toBe(`S 2 ${jobs.get(2n)!.filename} ${jobs.get(1n)!.filename}`);
      finisher.finishJob(job(3n));
      expect(sf.readNote()).toBe(`S 3 ${jobs.get(3n)!.filename}`);
    });
  });

  it('a job kept (--never-delete) writes no note; the one before still names the deletions waiting', async () => {
    const { q, jobs } = await withFinisher((finisher, sf, jobs) => {
      finisher.finishJob({ seq: 1n, filename: jobs.get(1n)!.filename, order: 'sequence', remove: true });
      finisher.finishJob({ seq: 2n, filename: jobs.get(2n)!.filename, order: 'sequence', remove: false });
      expect(sf.readNote()).toBe(`S 1 ${jobs.get(1n)!.filename}`);
      finisher.finishJob({ seq: 3n, filename: jobs.get(3n)!.filename, order: 'sequence', remove: true });
      expect(sf.readNote()).toBe(`S 3 ${jobs.get(3n)!.filename} ${jobs.get(1n)!.filename}`);
      finisher.settle();
      expect(sf.readNote()).toBe('');
    });
    expect(fs.readdirSync(q.jobsDir)).toEqual([jobs.get(2n)!.filename]);
  });
});

describe('recovery from a run of NOPs', () => {
  it('deletes only the NOPs of the noted run below nextseq', async () => {
    const { q, command, ran } = queueOf([NOP, NOP, COMMAND, NOP, NOP, NOP]);
    const jobs = await bySeq(q);
    q.setNext(5n);
    // The note of a run 1..6 (as if 3 were a NOP) left by a run killed once nextseq was 5.
    fs.writeFileSync(path.join(q.dir, 'nextseq.lock'), 'N 1 6\n');
    await processQueue(q, { ...command, maxJobs: 0 });
    // Gone: the NOPs 1, 2 and 4. Kept: the command below nextseq (3) and the NOPs from nextseq on.
    expect(new Set(fs.readdirSync(q.jobsDir))).toEqual(new Set([3n, 5n, 6n].map((s) => jobs.get(s)!.filename)));
    expect(ran()).toEqual([]);
    expect(fs.readFileSync(path.join(q.dir, 'nextseq.lock'), 'utf8')).toBe('');
  });

  it('leaves everything when nextseq did not move, and ignores a note of nonsense', async () => {
    for (const note of ['N 1 2', 'N 2 1', 'N x 3', 'N 1']) {
      const { q, command, ran } = queueOf([NOP, NOP, COMMAND]);
      fs.writeFileSync(path.join(q.dir, 'nextseq.lock'), `${note}\n`);
      expect(await processQueue(q, command), note).toEqual({ processed: 3, succeeded: 3, failed: 0 });
      expect(ran(), note).toEqual([3]);
      expect(q.getNext(), note).toBe(4n);
    }
  });
});

describe('processQueue over runs of NOPs', () => {
  it('reports each NOP, honours maxJobs and neverDelete, and keeps --output-to saveboth per job', async () => {
    const { q, command, ran } = queueOf([NOP, NOP, NOP, COMMAND, NOP]);
    const events: string[] = [];
    const r = await processQueue(q, {
      ...command,
      maxJobs: 2,
      neverDelete: true,
      onEvent: (e) => events.push(e.type === 'end' || e.type === 'start' ? `${e.type} ${e.seq}` : e.type),
    });
    expect(r).toEqual({ processed: 2, succeeded: 2, failed: 0 });
    expect(events).toEqual(['scan', 'start 1', 'end 1', 'start 2', 'end 2']);
    expect(fs.readdirSync(q.jobsDir)).toHaveLength(5);
    expect(q.getNext()).toBe(3n);
    expect(await processQueue(q, { ...command, outputTo: 'saveboth' })).toEqual({
      processed: 3,
      succeeded: 3,
      failed: 0,
    });
    expect(ran()).toEqual([4]);
    // Each job of the second run has its .out, NOPs included (as the reference makes them).
    expect(fs.readdirSync(q.jobsDir).filter((n) => n.endsWith('.out'))).toHaveLength(3);
  });

  it('a failure to record the run stops it with the error, and nothing is reported done', async () => {
    const { q, command } = queueOf([NOP, NOP]);
    fs.mkdirSync(path.join(q.dir, 'nextseq.temp')); // the temporary file can not be written
    const ends: bigint[] = [];
    await expect(processQueue(q, { ...command, onEvent: (e) => e.type === 'end' && ends.push(e.seq) })).rejects.toThrow(
      /nextseq/,
    );
    expect(ends).toEqual([]);
    expect(q.getNext()).toBe(1n);
    expect(fs.readdirSync(q.jobsDir)).toHaveLength(2);
  });
});
