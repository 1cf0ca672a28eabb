/**
 * A queue that waits until a time (src/process/due.ts): a job's not-before time (prepare
 * --not-before) holds it and, in strict order, every job after it; one pass stops there without
 * an error, a watching run sleeps on a timer (no CPU) and goes on, many queues wait apart.
 */
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  createLogger,
  encodeHeader,
  type PacketHeader,
  processQueue,
  processQueues,
  Queue,
} from '../../src/lowlevel.js';
import { DueWait } from '../../src/process/due.js';
import type { Retries } from '../../src/process/retry-run.js';
import type { JobEntry } from '../../src/queue/jobs.js';
import { tempDir } from '../helpers.js';

/** Job `seq` created at `secs`, not before `notBefore` if given. */
function packet(seq: bigint, notBefore?: number, secs = 1700000000n, kind: 'Command' | 'NOP' = 'Command'): Buffer {
  const cmd: PacketHeader['cmd'] = kind === 'NOP' ? { kind } : { kind, params: [], env: [] };
  const h: PacketHeader = { seq, ctime: { secs, nanos: 0 }, cmd, ...(notBefore === undefined ? {} : { notBefore }) };
  return encodeHeader(h);
}

/** A queue of jobs 1..3, job 2 not before `waitMs` from now. */
function setup(waitMs: number, name = 'q') {
  const q = Queue.init(path.join(tempDir(), name));
  const due = Date.now() + waitMs;
  q.writeBuffer(packet(1n));
  q.writeBuffer(packet(2n, due));
  q.writeBuffer(packet(3n));
  return { q, due };
}

/** A run function that notes each job as `SEQ@ms`. */
function recorder() {
  const seen: Array<{ seq: string; ms: number }> = [];
  const run = async (job: { variables: Record<string, string> }) => {
    seen.push({ seq: job.variables.FSPL_SEQ!, ms: Date.now() });
  };
  return { seen, run, seqs: () => seen.map((s) => s.seq) };
}

describe('not before a time', () => {
  it(
    'one pass: job 1 runs, then the run stops at job 2 (no ' + 'error), saying when it is due; job 3 waits behind it',
    async () => {
      const { q, due } = setup(60_000);
      const { run, seqs } = recorder();
      const lines: string[] = [];
      const summary = await processQueue(q, { run, logger: createLogger('info', (l) => lines.push(l)) });
      expect(seqs()).toEqual(['1']);
      expect(summary.processed).toBe(1);
      expect(q.getNext()).toBe(2n);
      const when = new Date(due).toISOString().replace('.000Z', 'Z');
      expect(lines).toEqual([
        expect.stringContaining(
          `Job 2 of ${JSON.stringify(q.dir)} is not due before ${when}; stopping, the job stays in the queue`,
        ),
      ]);
      // Again: the same, nothing more runs.
      await processQueue(q, { run, logger: createLogger('warn', () => {}) });
      expect(seqs()).toEqual(['1']);
    },
  );

  it('a time passed: the job runs at once', async () => {
    const { q } = setup(-1000);
    const { run, seqs } = recorder();
    await processQueue(q, { run });
    expect(seqs()).toEqual(['1', '2', '3']);
  });

  it('watching: job 2 runs once due, then job 3; the wait is a timer, using almost no CPU', async () => {
    const { q, due } = setup(2000);
    const { run, seen, seqs } = recorder();
    const stop = new AbortController();
    const events: string[] = [];
    let cpuAtWait: NodeJS.CpuUsage | undefined;
    let cpuWait: NodeJS.CpuUsage | undefined;
    await processQueue(q, {
      run,
      watch: true,
      signal: stop.signal,
      onEvent: (e) => {
        events.push(e.type);
        if (e.type === 'waiting') {
          expect(e.seq).toBe(2n);
          expect(e.until.getTime()).toBe(due);
          cpuAtWait = process.cpuUsage();
        }
        if (e.type === 'start' && e.seq === 2n) cpuWait = process.cpuUsage(cpuAtWait);
        if (e.type === 'end' && e.seq === 3n) stop.abort();
      },
    });
    expect(seqs()).toEqual(['1', '2', '3']);
    expect(seen[1]!.ms).toBeGreaterThanOrEqual(due);
    expect(seen[2]!.ms).toBeGreaterThanOrEqual(due);
    expect(events.filter((t) => t === 'waiting')).toHaveLength(1);
    // About 2 s of waiting: a timer costs next to nothing (polling would cost far more).
    expect((cpuWait!.user + cpuWait!.system) / 1e6).toBeLessThan(0.3);
  });

  it('watching: a job arriving meanwhile does not pass the waiting one (strict order)', async () => {
    const { q, due } = setup(1500);
    const { run, seen, seqs } = recorder();
    const stop = new AbortController();
    await processQueue(q, {
      run,
      watch: true,
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === 'waiting') setTimeout(() => q.writeBuffer(packet(4n)), 100);
        if (e.type === 'end' && e.seq === 4n) stop.abort();
      },
    });
    expect(seqs()).toEqual(['1', '2', '3', '4']);
    expect(seen[1]!.ms).toBeGreaterThanOrEqual(due);
  });

  it('timestamp order: the job whose turn it is waits, and the jobs after it wait behind it', async () => {
    const q = Queue.init(path.join(tempDir(), 'q'));
    const due = Date.now() + 1500;
    // In time order: 3, then 1 (not before `due`), then 2.
    q.writeBuffer(packet(1n, due, 20n));
    q.writeBuffer(packet(2n, undefined, 30n));
    q.writeBuffer(packet(3n, undefined, 10n));
    const { run, seen, seqs } = recorder();
    await processQueue(q, { run, orderBy: 'timestamp', logger: createLogger('warn', () => {}) });
    expect(seqs()).toEqual(['3']);
    const stop = new AbortController();
    await processQueue(q, {
      run,
      orderBy: 'timestamp',
      watch: true,
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === 'end' && e.seq === 2n) stop.abort();
      },
    });
    expect(seqs()).toEqual(['3', '1', '2']);
    expect(seen[1]!.ms).toBeGreaterThanOrEqual(due);
  });

  it('a run of NOP jobs stops at one not due yet', async () => {
    const q = Queue.init(path.join(tempDir(), 'q'));
    q.writeBuffer(packet(1n, undefined, 1n, 'NOP'));
    q.writeBuffer(packet(2n, Date.now() + 60_000, 1n, 'NOP'));
    q.writeBuffer(packet(3n, undefined, 1n, 'NOP'));
    const summary = await processQueue(q, { command: 'true', logger: createLogger('warn', () => {}) });
    expect(summary.processed).toBe(1);
    expect(q.getNext()).toBe(2n);
  });

  it('many queues, one pass: the waiting queue stops at its job (done, no error), the others run', async () => {
    const a = setup(60_000, 'a');
    const b = Queue.init(path.join(tempDir(), 'b'));
    for (let s = 1n; s <= 3n; s++) b.writeBuffer(packet(s));
    const { run } = recorder();
    const r = await processQueues([a.q.dir, b.dir], { run, logger: createLogger('warn', () => {}) });
    expect(r.queues.map((x) => [x.state, x.processed])).toEqual([
      ['done', 1],
      ['done', 3],
    ]);
    expect(a.q.getNext()).toBe(2n);
  });

  it('many queues, watching (--queues-in): one waiting queue does not hold the others', async () => {
    const parent = tempDir();
    const a = Queue.init(path.join(parent, 'a'));
    const b = Queue.init(path.join(parent, 'b'));
    const due = Date.now() + 1500;
    a.writeBuffer(packet(1n, due));
    a.writeBuffer(packet(2n));
    for (let s = 1n; s <= 3n; s++) b.writeBuffer(packet(s));
    const seen: Array<{ q: string; seq: string; ms: number }> = [];
    const stop = new AbortController();
    let ends = 0;
    await processQueues([], {
      queuesIn: parent,
      run: async (job) => {
        seen.push({ q: path.basename(job.variables.FSPL_JOB_QUEUEDIR!), seq: job.variables.FSPL_SEQ!, ms: Date.now() });
      },
      watch: true,
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === 'end' && ++ends === 5) stop.abort();
      },
    });
    const of = (name: string) => seen.filter((s) => s.q === name);
    expect(of('a').map((s) => s.seq)).toEqual(['1', '2']);
    expect(of('b').map((s) => s.seq)).toEqual(['1', '2', '3']);
    expect(of('a')[0]!.ms).toBeGreaterThanOrEqual(due);
    expect(Math.max(...of('b').map((s) => s.ms))).toBeLessThan(due);
  });

  it('DueWait checks the wall clock each time: early, it waits; at the time, it does not; each wait said once', () => {
    const retries = { waits: () => false, dueMs: undefined } as unknown as Retries;
    const said: string[] = [];
    const wait = new DueWait(retries, (seq, ms) => said.push(`${seq}@${ms}`));
    const entry = {
      filename: 'fspl-x.fspl',
      header: { seq: 2n, ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'NOP' }, notBefore: 5000 },
    } as JobEntry;
    const now = vi.spyOn(Date, 'now');
    try {
      now.mockReturnValue(4999);
      expect(wait.waits(entry)).toBe(true);
      expect(wait.ms).toBe(5000);
      expect(wait.error(entry, 2n)).toBeUndefined();
      // The clock set back: still early, still waiting, said once.
      now.mockReturnValue(1000);
      expect(wait.waits(entry)).toBe(true);
      now.mockReturnValue(5000);
      expect(wait.waits(entry)).toBe(false);
      expect(wait.ms).toBeUndefined();
    } finally {
      now.mockRestore();
    }
    expect(said).toEqual(['2@5000']);
  });
});
