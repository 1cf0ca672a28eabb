/**
 * processQueues: many queues in one process. Each queue keeps its own order, lock and --on-error
 * outcome; at most `jobs` run at once, shared in turns; a failing job stops only its queue; with
 * watch, queues made later are served and queues removed are forgotten. No timing assertions:
 * the order of events is checked, not their times.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import type { CommandType } from '../../src/packet/types.js';
import { processQueues } from '../../src/process/many-queues.js';
import type { QueuesEvent } from '../../src/process/options.js';
import type { JobContext } from '../../src/process/process.js';
import { Queue } from '../../src/queue/queue.js';
import { FileLock } from '../../src/sys/lock.js';
import { memTempDir, rng } from '../helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function put(q: Queue, seq: number | bigint, kind: 'Command' | 'NOP' = 'Command'): void {
  const cmd: CommandType = kind === 'NOP' ? { kind: 'NOP' } : { kind: 'Command', params: [], env: [] };
  q.writeBuffer(encodeHeader(makeHeader({ seq: BigInt(seq), cmd })));
}

/** n queues under parent (q000, q001, ...), each with jobs numbered 1..perQueue. */
function queues(parent: string, n: number, perQueue: number): Queue[] {
  const out: Queue[] = [];
  for (let i = 0; i < n; i++) {
    const q = Queue.init(path.join(parent, `q${String(i).padStart(3, '0')}`));
    for (let s = 1; s <= perQueue; s++) put(q, s);
    out.push(q);
  }
  return out;
}

const nextseq = (q: Queue) => fs.readFileSync(q.seqfilePath, 'utf8').trim();
const jobFiles = (q: Queue) => fs.readdirSync(q.jobsDir).filter((n) => n.endsWith('.fspl'));

describe('processQueues', () => {
  it(
    '50 queues x 40 jobs, jobs: 4: each queue in its order, ' + 'never two of one queue at once, at most 4 at once',
    async () => {
      const parent = memTempDir();
      const all = queues(parent, 50, 40);
      const random = rng(30);
      const ran = new Map<string, number[]>();
      const runningIn = new Set<string>();
      let running = 0;
      let peak = 0;
      let overlaps = 0;
      const run = async (job: JobContext) => {
        if (runningIn.has(job.queuedir)) overlaps++;
        runningIn.add(job.queuedir);
        peak = Math.max(peak, ++running);
        job.payload.resume();
        await sleep(Math.floor(random() * 4));
        (ran.get(job.queuedir) ?? ran.set(job.queuedir, []).get(job.queuedir)!).push(Number(job.seq));
        running--;
        runningIn.delete(job.queuedir);
      };
      const summary = await processQueues([], { run, queuesIn: parent, jobs: 4 });
      expect(summary.processed).toBe(2000);
      expect(summary.queues.map((r) => r.state)).toEqual(all.map(() => 'done'));
      expect(overlaps).toBe(0);
      expect(peak).toBe(4);
      for (const q of all) {
        expect(ran.get(q.dir), q.dir).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
        expect(nextseq(q)).toBe('41');
        expect(jobFiles(q)).toEqual([]);
      }
    },
  );

  it('takes turns: 20 queues of one job all start before the tenth job of a busy queue', async () => {
    const parent = memTempDir();
    const busy = Queue.init(path.join(parent, 'a-busy'));
    for (let s = 1; s <= 1000; s++) put(busy, s);
    const small = queues(path.join(parent), 20, 1);
    const starts: string[] = [];
    const summary = await processQueues([busy.dir, ...small.map((q) => q.dir)], {
      jobs: 2,
      maxJobs: 40, // the busy queue's backlog does not need to run out for the test to tell
      run: async (job) => {
        starts.push(`${path.basename(job.queuedir)} ${job.seq}`);
        job.payload.resume();
        await sleep(2);
      },
    });
    expect(summary.processed).toBe(40);
    const tenth = starts.indexOf('a-busy 10');
    expect(tenth).toBeGreaterThan(0);
    for (const q of small) expect(starts.indexOf(`${path.basename(q.dir)} 1`), q.dir).toBeLessThan(tenth);
    expect(summary.queues.find((r) => r.queue === busy.dir)?.processed).toBe(20);
  });

  it('skips a queue another processor holds, with an event, and runs the rest', async () => {
    const parent = memTempDir();
    const [a, b, c] = queues(parent, 3, 2);
    const held = FileLock.acquire(`${b!.seqfilePath}.lock`, { create: false });
    const events: QueuesEvent[] = [];
    try {
      const summary = await processQueues([a!.dir, b!.dir, c!.dir], {
        command: 'true',
        onEvent: (e) => events.push(e),
      });
      expect(summary.queues.map((r) => [path.basename(r.queue), r.state, r.processed])).toEqual([
        ['q000', 'done', 2],
        ['q001', 'skipped', 0],
        ['q002', 'done', 2],
      ]);
    } finally {
      held.release();
    }
    expect(events.filter((e) => e.type === 'skipped').map((e) => (e as { queue: string }).queue)).toEqual([b!.dir]);
    expect(nextseq(b!)).toBe('1');
    expect(jobFiles(b!)).toHaveLength(2);
  });

  for (const onError of ['retry', 'delete', 'leave'] as const) {
    it(`a failing job under --on-error ${onError} affects its own queue only`, async () => {
      const parent = memTempDir();
      const [good, bad] = queues(parent, 2, 3);
      const summary = await processQueues([good!.dir, bad!.dir], {
        onError,
        run: async (job) => {
          job.payload.resume();
          if (job.queuedir === bad!.dir && job.seq === 2n) throw new Error('boom');
        },
      });
      const [g, b] = summary.queues;
      expect([g!.state, g!.processed, nextseq(good!), jobFiles(good!).length]).toEqual(['done', 3, '4', 0]);
      if (onError === 'retry') {
        // As a queue-process of that queue alone: it stops at the failed job, which stays.
        expect([b!.state, b!.processed, b!.failed, nextseq(bad!), jobFiles(bad!).length]).toEqual([
          'stopped',
          2,
          1,
          '2',
          2,
        ]);
        expect(b!.error?.message).toMatch(/^Job 2 failed \(function failed: boom\)/);
      } else {
        // delete: the failed job goes; leave: it stays, below nextseq. Either way the queue goes on.
        expect([b!.state, b!.processed, b!.failed, nextseq(bad!)]).toEqual(['done', 3, 1, '4']);
        expect(jobFiles(bad!)).toHaveLength(onError === 'leave' ? 1 : 0);
      }
    });
  }

  it('completes a record that a killed run left half made, in a queue with nothing to run', async () => {
    const parent = memTempDir();
    const [q] = queues(parent, 1, 1);
    // A run killed after moving nextseq past job 1, before its file was deleted: the note names it.
    const [file] = jobFiles(q!);
    fs.writeFileSync(q!.seqfilePath, '2\n');
    fs.writeFileSync(`${q!.seqfilePath}.lock`, `S 1 ${file}\n`);
    const summary = await processQueues([q!.dir], { command: 'true' });
    expect(summary.processed).toBe(0);
    expect(jobFiles(q!)).toEqual([]);
    expect(fs.readFileSync(`${q!.seqfilePath}.lock`, 'utf8')).toBe('');
  });

  it('serves a queue given twice (two paths to it) once', async () => {
    const parent = memTempDir();
    const [q] = queues(parent, 1, 3);
    let n = 0;
    const summary = await processQueues([q!.dir, `${parent}/./q000`], {
      queuesIn: parent,
      run: (job) => void (n++, job.payload.resume()),
    });
    expect(n).toBe(3);
    expect(summary.queues).toHaveLength(1);
  });

  it('serves once a queue reached through links: a parent given by a link, a link under the parent', async () => {
    const top = memTempDir();
    const parent = path.join(top, 'real');
    fs.mkdirSync(parent);
    const [q0, q1] = queues(parent, 2, 2);
    fs.symlinkSync(parent, path.join(top, 'via'));
    fs.symlinkSync(q1!.dir, path.join(parent, 'q001-too'));
    const served = new Map<string, number>();
    const summary = await processQueues([q0!.dir], {
      queuesIn: [path.join(top, 'via'), parent],
      run: (job) =>
        void (served.set(job.seq.toString(), (served.get(job.seq.toString()) ?? 0) + 1), job.payload.resume()),
    });
    expect(summary.queues).toHaveLength(2);
    expect(summary.processed).toBe(4);
    expect([...served.values()]).toEqual([2, 2]);
    // The listing told the identities of the plain directories, a link's none.
    const { listQueueDirs } = await import('../../src/queue/queue-dirs.js');
    expect(listQueueDirs(path.join(top, 'via')).map((e) => [e.name, e.identity])).toEqual([
      ['q000', path.join(fs.realpathSync(parent), 'q000')],
      ['q001', path.join(fs.realpathSync(parent), 'q001')],
      ['q001-too', undefined],
    ]);
  });

  it('counts maxJobs across all the queues', async () => {
    const parent = memTempDir();
    queues(parent, 5, 5);
    const summary = await processQueues([], {
      queuesIn: parent,
      jobs: 3,
      maxJobs: 7,
      run: (job) => void job.payload.resume(),
    });
    expect(summary.processed).toBe(7);
  });

  it('runs each queue in timestamp order when asked', async () => {
    const parent = memTempDir();
    const q = Queue.init(path.join(parent, 'ts'));
    for (const [seq, secs] of [
      [5, 300],
      [9, 100],
      [1, 200],
    ] as const) {
      q.writeBuffer(
        encodeHeader(
          makeHeader({
            seq: BigInt(seq),
            ctime: { secs: BigInt(secs), nanos: 0 },
            cmd: { kind: 'Command', params: [], env: [] },
          }),
        ),
      );
    }
    const seen: bigint[] = [];
    await processQueues([], {
      queuesIn: parent,
      orderBy: 'timestamp',
      run: (job) => void (seen.push(job.seq), job.payload.resume()),
    });
    expect(seen).toEqual([9n, 1n, 5n]);
  });

  it('reports a queue that is not there as stopped, and serves the others', async () => {
    const parent = memTempDir();
    const [q] = queues(parent, 1, 1);
    const summary = await processQueues([path.join(parent, 'nosuch'), q!.dir], { command: 'true' });
    expect(summary.queues.map((r) => r.state)).toEqual(['stopped', 'done']);
    expect(summary.queues[0]!.error?.message).toMatch(/nosuch/);
  });

  it('fails at once on a --queues-in parent that cannot be read', async () => {
    await expect(processQueues([], { queuesIn: '/nonexistent/parent', command: 'true' })).rejects.toThrow(
      'Cannot read the queues of --queues-in: No such file or directory: /nonexistent/parent',
    );
  });

  it('leaves out what under a parent is not a queue: files, hidden and append-only directories', async () => {
    const parent = memTempDir();
    queues(parent, 1, 1);
    fs.writeFileSync(path.join(parent, 'notes.txt'), 'x');
    fs.mkdirSync(path.join(parent, '.stfolder'));
    Queue.init(path.join(parent, 'append-only'), { appendOnly: true });
    fs.mkdirSync(path.join(parent, 'empty'));
    const summary = await processQueues([], { queuesIn: parent, command: 'true' });
    expect(summary.queues.map((r) => path.basename(r.queue))).toEqual(['q000']);
  });
});

describe('processQueues with watch', () => {
  async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(10);
    }
  }

  for (const mode of [
    { name: 'events', watch: true as const },
    { name: 'polling', watch: { pollInterval: 0.05 } },
  ]) {
    it(`serves queues made later and forgets queues removed, without an error loop (${mode.name})`, async () => {
      const parent = memTempDir();
      const [a] = queues(parent, 1, 1);
      const ran: string[] = [];
      const events: QueuesEvent[] = [];
      const stop = new AbortController();
      const done = processQueues([], {
        queuesIn: parent,
        watch: mode.watch,
        signal: stop.signal,
        run: (job) => void (ran.push(`${path.basename(job.queuedir)} ${job.seq}`), job.payload.resume()),
        onEvent: (e) => events.push(e),
      });
      await until('the first queue', () => ran.includes('q000 1'));
      // Made the way queue-init makes it: the directory first, then jobs/, then the lock.
      const b = Queue.init(path.join(parent, 'later'));
      put(b, 1);
      await until('the queue made later', () => ran.includes('later 1'));
      put(b, 2);
      await until('its next job', () => ran.includes('later 2'));
      fs.rmSync(a!.dir, { recursive: true });
      await until('the removed queue forgotten', () => events.some((e) => e.type === 'removed'));
      await sleep(300); // several polls and safety looks: nothing more about it
      stop.abort();
      const summary = await done;
      expect(events.filter((e) => e.type === 'stopped')).toEqual([]);
      expect(events.filter((e) => e.type === 'removed')).toEqual([{ type: 'removed', queue: a!.dir }]);
      expect(summary.queues.map((r) => [path.basename(r.queue), r.state, r.processed])).toEqual([
        ['q000', 'removed', 1],
        ['later', 'done', 2],
      ]);
    });
  }

  it('tries a queue stopped by a failed job again when its jobs/ changes', async () => {
    const parent = memTempDir();
    const [q] = queues(parent, 1, 1);
    let fail = true;
    const stop = new AbortController();
    const events: QueuesEvent[] = [];
    const done = processQueues([q!.dir], {
      watch: true,
      signal: stop.signal,
      run: (job) => {
        job.payload.resume();
        if (fail) throw new Error('not yet');
      },
      onEvent: (e) => events.push(e),
    });
    await until('the failure', () => events.some((e) => e.type === 'stopped'));
    fail = false;
    put(q!, 2);
    await until('both jobs', () => nextseq(q!) === '3');
    stop.abort();
    const summary = await done;
    expect(summary.queues[0]!.processed).toBe(3);
  });

  for (const mode of [
    { name: 'events', watch: true as const },
    { name: 'polling', watch: { pollInterval: 0.05 } },
  ]) {
    it(
      `runs a queue stopped by a failed job once ` +
        `queue-set-next skips it, with nothing arriving ` +
        `(${mode.name})`,
      async () => {
        const parent = memTempDir();
        const [q, other] = queues(parent, 2, 3);
        const ran: string[] = [];
        const events: QueuesEvent[] = [];
        const stop = new AbortController();
        const done = processQueues([], {
          queuesIn: parent,
          watch: mode.watch,
          signal: stop.signal,
          run: (job) => {
            job.payload.resume();
            ran.push(`${path.basename(job.queuedir)} ${job.seq}`);
            if (job.queuedir === q!.dir && job.seq === 1n) throw new Error('job 1 fails');
          },
          onEvent: (e) => events.push(e),
        });
        await until(
          'the failure and the other queue',
          () => events.some((e) => e.type === 'stopped') && nextseq(other!) === '4',
        );
        // Past the coarse window of the last change in its jobs/ (polling looks again at such a
        // directory): from here on only the new nextseq can explain a run (a safety look, 30 s away, sees no change in
        // jobs/).
        await sleep(2100);
        expect(ran.filter((r) => r.startsWith('q000'))).toEqual(['q000 1']);
        q!.setNext(2n); // what `fspl queue-set-next -q Q 2` does
        await until('jobs 2 and 3', () => nextseq(q!) === '4');
        stop.abort();
        const summary = await done;
        expect(ran.filter((r) => r.startsWith('q000'))).toEqual(['q000 1', 'q000 2', 'q000 3']);
        expect(jobFiles(q!)).toHaveLength(1); // job 1, skipped, stays
        expect(summary.queues.map((r) => [path.basename(r.queue), r.state, r.processed])).toEqual([
          ['q000', 'done', 3],
          ['q001', 'done', 3],
        ]);
      },
    );
  }

  it(
    'runs a stopped queue whose skip another processor made ' +
      'while it held the lock (queue-process -n 1), once it lets go',
    async () => {
      const parent = memTempDir();
      const [q] = queues(parent, 1, 3);
      const events: QueuesEvent[] = [];
      const stop = new AbortController();
      const done = processQueues([q!.dir], {
        watch: true,
        signal: stop.signal,
        run: (job) => {
          job.payload.resume();
          if (job.seq === 1n) throw new Error('job 1 fails');
        },
        onEvent: (e) => events.push(e),
      });
      await until('the failure', () => events.some((e) => e.type === 'stopped'));
      // The operator's `queue-process --on-error delete -n 1`, as the run sees it: every change made under the lock.
      const held = FileLock.acquire(`${q!.seqfilePath}.lock`, { create: false });
      try {
        fs.writeFileSync(`${q!.seqfilePath}.temp`, '2\n');
        fs.renameSync(`${q!.seqfilePath}.temp`, q!.seqfilePath);
        await until('the look refused by the lock', () => events.some((e) => e.type === 'skipped'));
      } finally {
        held.release(); // no change after this: only a look put off can see that the lock is free
      }
      await until('jobs 2 and 3', () => nextseq(q!) === '4');
      stop.abort();
      expect((await done).queues[0]).toMatchObject({ state: 'done', processed: 3 });
    },
  );

  it('waits for the running jobs when stopped, and releases every lock', async () => {
    const parent = memTempDir();
    const all = queues(parent, 3, 1);
    const stop = new AbortController();
    let finished = 0;
    const done = processQueues([], {
      queuesIn: parent,
      watch: true,
      jobs: 3,
      signal: stop.signal,
      run: async (job) => {
        job.payload.resume();
        stop.abort();
        await sleep(50);
        finished++;
      },
    });
    const summary = await done;
    expect(finished).toBe(summary.processed);
    for (const q of all) FileLock.acquire(`${q.seqfilePath}.lock`, { create: false }).release();
  });
});

describe('processQueues stopped by its interrupt', () => {
  it(
    'stops the running commands and leaves their jobs in ' + 'their queues, whatever onError says; every lock released',
    async () => {
      const parent = memTempDir();
      const all = queues(parent, 3, 2);
      const marks = memTempDir();
      const interrupt = new AbortController();
      const events: QueuesEvent[] = [];
      const done = processQueues([], {
        queuesIn: parent,
        jobs: 3,
        onError: 'delete',
        interrupt: interrupt.signal,
        onEvent: (e) => events.push(e),
        command: 'sh',
        params: ['-c', `touch "${marks}/$(basename "$FSPL_JOB_QUEUEDIR")"; sleep 300`],
      });
      while (fs.readdirSync(marks).length < 3) await sleep(10);
      interrupt.abort();
      const summary = await done;
      expect(summary).toMatchObject({ processed: 0, succeeded: 0, failed: 0 });
      for (const q of all) {
        expect(nextseq(q)).toBe('1');
        expect(jobFiles(q)).toHaveLength(2);
        FileLock.acquire(`${q.seqfilePath}.lock`, { create: false }).release();
      }
      const ends = events.filter((e) => e.type === 'end');
      expect(ends.map((e) => [e.ok, e.interrupted, e.why])).toEqual(
        Array(3).fill([false, true, 'command was stopped before it finished']),
      );
    },
  );

  it(
    'stopTimeout: once the signal aborts, the running ' + 'functions have that long, then their signal aborts too',
    async () => {
      const parent = memTempDir();
      const all = queues(parent, 2, 1);
      const signal = new AbortController();
      let aborted = 0;
      const summary = await processQueues([], {
        queuesIn: parent,
        jobs: 2,
        signal: signal.signal,
        stopTimeout: 0.05,
        run: async (job) => {
          job.payload.resume();
          signal.abort();
          // A job that runs until it is told to stop.
          await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
          aborted++;
          throw job.signal.reason;
        },
      });
      expect(aborted).toBe(2);
      expect(summary).toMatchObject({ processed: 0, failed: 0 });
      for (const q of all) expect([nextseq(q), jobFiles(q).length]).toEqual(['1', 1]);
    },
  );
});

describe('processQueues at scale', () => {
  it('10,000 queues of one job each, in one pass', { timeout: 120_000 }, async () => {
    const parent = memTempDir();
    const n = 10_000;
    // Made directly (what queue-init leaves), not through Queue.init's fsyncs: this tests the run.
    const header = (seq: bigint) => encodeHeader(makeHeader({ seq, cmd: { kind: 'Command', params: [], env: [] } }));
    const packet = header(1n);
    for (let i = 0; i < n; i++) {
      const dir = path.join(parent, `q${i}`);
      fs.mkdirSync(path.join(dir, 'jobs'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'nextseq'), '1\n');
      fs.writeFileSync(path.join(dir, 'nextseq.lock'), '');
      fs.writeFileSync(
        path.join(dir, 'jobs', `fspl-00000000-0000-4000-8000-${String(i).padStart(12, '0')}.fspl`),
        packet,
      );
    }
    const seen = new Set<string>();
    const summary = await processQueues([], {
      queuesIn: parent,
      jobs: 8,
      run: (job) => void (seen.add(job.queuedir), job.payload.resume()),
    });
    expect(summary.processed).toBe(n);
    expect(seen.size).toBe(n);
    expect(summary.queues.every((r) => r.state === 'done' && r.processed === 1)).toBe(true);
    for (let i = 0; i < n; i += 997) expect(fs.readFileSync(path.join(parent, `q${i}`, 'nextseq'), 'utf8')).toBe('2\n');
  });
});
