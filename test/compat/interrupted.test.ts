/**
 * The reference continues a queue that our queue-process left half-way through recording a job
 * or a run of NOPs (src/process/finish.ts), as a kill -9 leaves it: cut after every operation of the
 * record, then the reference runs the queue, then ours. The reference never reads the note in the
 * lock file, so it does what it does after a crash of its own (it may run the last job again and
 * leave spent files below nextseq); ours then finds nothing to run and removes those files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { silentLogger } from '../../src/base/log.js';
import { type CommandType, encodeHeader, Queue } from '../../src/lowlevel.js';
import { Finisher, type FinishRecord, jobRecord, nopRunAt, nopRunRecord } from '../../src/process/finish.js';
import type { JobEntry } from '../../src/queue/jobs.js';
import { runBatchSync } from '../../src/sys/fs-batch.js';
import { describeCompat, fspl, type Impl, tmpDir } from './harness.js';

const NOP: CommandType = { kind: 'NOP' };
const COMMAND: CommandType = { kind: 'Command', params: [], env: [] };

/** Jobs 1.. of these kinds in a new queue; the record `make` cut after its first `k` operations. */
async function cutQueue(
  kinds: CommandType[],
  k: number,
  make: (jobs: Map<bigint, JobEntry>) => FinishRecord,
): Promise<{ q: Queue; ops: number }> {
  const q = Queue.init(path.join(tmpDir(), 'q'));
  kinds.forEach((cmd, i) =>
    q.writeBuffer(encodeHeader({ seq: BigInt(i + 1), ctime: { secs: 1700000000n, nanos: 0 }, cmd })),
  );
  const record = make(new Map((await q.scan()).map((e) => [e.header.seq, e])));
  const sf = q.lockSeqfile();
  try {
    const ops = new Finisher(q, sf, silentLogger).steps(record).steps.flat();
    expect([...runBatchSync(ops.slice(0, k))].filter((r) => r < 0)).toEqual([]);
    return { q, ops: ops.length };
  } finally {
    sf.release();
  }
}

/** Run queue-process with `impl`, its command logging each job's number; the numbers it ran. */
async function runQueue(impl: Impl, q: Queue): Promise<number[]> {
  const log = path.join(q.dir, '..', `${impl}.log`);
  const r = await fspl(impl, ['queue-process', '-q', q.dir, 'sh', '--', '-c', `echo $FSPL_SEQ >> ${log}`]);
  expect(r.code, `${impl}: ${r.stderr}`).toBe(0);
  return fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map(Number) : [];
}

describeCompat('the reference after a record of ours cut short', () => {
  test(
    'a run of NOPs, cut after each operation: the reference ' + 'runs the rest once, ours then removes the spent NOPs',
    async () => {
      const kinds = [NOP, NOP, NOP, COMMAND, NOP, COMMAND];
      const make = (jobs: Map<bigint, JobEntry>) => nopRunRecord(nopRunAt(jobs, 1n, Infinity), true);
      const { ops } = await cutQueue(kinds, 0, make);
      for (let k = 0; k <= ops; k++) {
        const { q } = await cutQueue(kinds, k, make);
        expect(await runQueue('ref', q), `cut after ${k}`).toEqual([4, 6]);
        expect(q.getNext(), `cut after ${k}`).toBe(7n);
        expect(await runQueue('ours', q), `cut after ${k}`).toEqual([]);
        expect(fs.readdirSync(q.jobsDir), `cut after ${k}: spent files`).toEqual([]);
      }
    },
  );

  test('a job, cut after each operation: the reference runs it again only if nextseq had not moved', async () => {
    const kinds = [COMMAND, COMMAND];
    const make = (jobs: Map<bigint, JobEntry>) =>
      jobRecord({ seq: 1n, filename: jobs.get(1n)!.filename, order: 'sequence', remove: true });
    const { ops } = await cutQueue(kinds, 0, make);
    for (let k = 0; k <= ops; k++) {
      const { q } = await cutQueue(kinds, k, make);
      // Operations: the note, nextseq.temp written, renamed (nextseq moved), ... the unlink.
      expect(await runQueue('ref', q), `cut after ${k}`).toEqual(k < 3 ? [1, 2] : [2]);
      expect(await runQueue('ours', q), `cut after ${k}`).toEqual([]);
      expect(fs.readdirSync(q.jobsDir), `cut after ${k}: spent files`).toEqual([]);
      expect(q.getNext(), `cut after ${k}`).toBe(3n);
    }
  });
});
