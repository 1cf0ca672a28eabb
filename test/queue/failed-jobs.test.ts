/**
 * Putting failed jobs back (src/queue/failed-jobs.ts, `fspl queue-retry`): in order, with new
 * numbers, their facts taken off, each once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader, type PacketHeader, processQueue, Queue, retryFailedJobs } from '../../src/lowlevel.js';
import { transferJob } from '../../src/queue/transfer.js';
import { tempDir } from '../helpers.js';

function packet(seq: bigint): Buffer {
  const h: PacketHeader = {
    seq,
    ctime: { secs: 1700000000n + seq, nanos: 0 },
    cmd: { kind: 'Command', params: [], env: [] },
  };
  return Buffer.concat([encodeHeader(h), Buffer.from(`payload ${seq}\n`)]);
}

/** A queue whose jobs 2 and 4 fail once, served with --failed-to F. */
async function failedQueue() {
  const dir = tempDir();
  const q = Queue.init(path.join(dir, 'q'));
  for (let s = 1n; s <= 5n; s++) q.writeBuffer(packet(s));
  const F = path.join(dir, 'F');
  const ran: string[] = [];
  let failing = true;
  const run = async (job: { variables: Record<string, string> }) => {
    ran.push(`${job.variables.FSPL_SEQ}`);
    if (failing && (job.variables.FSPL_SEQ === '2' || job.variables.FSPL_SEQ === '4')) throw new Error('fails');
  };
  const events: string[] = [];
  await processQueue(q, {
    run,
    retries: 0,
    failedTo: F,
    onEvent: (e) => e.type === 'end' && events.push(`${e.seq}:${e.outcome}`),
  });
  failing = false;
  return { dir, q, F, ran, run, events };
}

describe('failed jobs', () => {
  it('--failed-to moves the jobs that used their tries, with their facts; the queue goes on', async () => {
    const { q, F, ran, events } = await failedQueue();
    expect(ran).toEqual(['1', '2', '3', '4', '5']);
    expect(events).toEqual(['1:success', '2:moved', '3:success', '4:moved', '5:success']);
    expect(q.getNext()).toBe(6n);
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
    const failed = await Queue.open(F).list();
    expect(
      failed.map((j) => [j.header.seq, j.header.failure?.seq, j.header.failure?.attempts, j.header.failure?.queue]),
    ).toEqual([
      [1n, 2n, 1, path.resolve(q.dir)],
      [2n, 4n, 1, path.resolve(q.dir)],
    ]);
    expect(failed[0]!.header.failure?.why).toMatch(/function failed: fails/);
    expect(fs.readdirSync(q.dir).sort()).toEqual(['jobs', 'nextseq', 'nextseq.lock']);
  });

  it('queue-retry puts them back in order with new numbers, without the facts, and they run', async () => {
    const { q, F, ran, run } = await failedQueue();
    const moved = await retryFailedJobs(F, q.dir);
    expect(moved).toEqual([
      { from: 1n, to: 6n },
      { from: 2n, to: 7n },
    ]);
    expect(fs.readdirSync(Queue.open(F).jobsDir)).toEqual([]);
    expect(Queue.open(F).getNext()).toBe(3n);
    const back = await q.list();
    expect(back.map((j) => [j.header.seq, j.header.failure, j.header.ctime.secs])).toEqual([
      [6n, undefined, 1700000002n],
      [7n, undefined, 1700000004n],
    ]);
    ran.length = 0;
    await processQueue(q, { run });
    expect(ran).toEqual(['6', '7']);
  });

  it(
    "queue-retry takes the new numbers from the sender's " + 'seqfile when given, and only the jobs asked for',
    async () => {
      const { dir, q, F } = await failedQueue();
      const seqfile = path.join(dir, 'sender-seq');
      fs.writeFileSync(seqfile, '10\n');
      const moved = await retryFailedJobs(F, q.dir, { seqfile, jobs: [2n] });
      expect(moved).toEqual([{ from: 2n, to: 10n }]);
      expect(fs.readFileSync(seqfile, 'utf8')).toBe('11\n');
      expect((await Queue.open(F).list()).map((j) => j.header.seq)).toEqual([1n]);
      await expect(retryFailedJobs(F, q.dir, { jobs: [9n] })).rejects.toThrow(/Job 9 not found/);
    },
  );

  it('a queue-retry killed after the copy, before the removal: the next one completes it, once', async () => {
    const { q, F } = await failedQueue();
    const failed = Queue.open(F);
    const [first] = await failed.list();
    transferJob(failed, first!, q); // as far as a kill -9 let it go: the copy and the journal, not the removal
    const moved = await retryFailedJobs(F, q.dir);
    expect(moved).toEqual([{ from: 2n, to: 7n }]);
    expect((await q.list()).map((j) => j.header.seq)).toEqual([6n, 7n]);
    expect(fs.readdirSync(failed.jobsDir)).toEqual([]);
    expect(fs.readdirSync(F).sort()).toEqual(['jobs', 'nextseq', 'nextseq.lock', 'writeseq', 'writeseq.lock']);
  });
});
