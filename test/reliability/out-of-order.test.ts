/**
 * Out-of-order arrival: jobs 1..100 are renamed into jobs/ one by one in a random order (as a
 * sync tool or a retried transfer delivers them) while the queue is being processed.
 *
 * Promise checked: they run in sequence order, each exactly once; processing waits at a gap and
 * goes on when the missing job arrives; nothing is left; nextseq ends at 101.
 *
 * How the queue is processed is a parameter (a Processor): the scenarios run against each entry
 * of PROCESSORS: repeated `fspl queue-process` runs, back to back, and one long-running
 * `fspl queue-process --watch`, on file system events and on polling.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { Queue } from '../../src/queue/queue.js';
import {
  fspl,
  ls,
  packet,
  type Rng,
  readLog,
  record,
  recorder,
  rngFor,
  sleep,
  startFspl,
  tempDir,
  waitFor,
} from './common.js';

const JOBS = 100;

interface ProcessorRun {
  /** Called once every job has arrived and nextseq has reached JOBS + 1; resolves when stopped. */
  stop(): Promise<{ runs: number; idleRuns: number }>;
}

/** A way of processing a queue while jobs arrive. */
interface Processor {
  name: string;
  start(qdir: string, command: string): ProcessorRun;
}

/** `fspl queue-process` run again and again, as cron or a systemd timer would, without a pause. */
const repeatedRuns: Processor = {
  name: 'repeated queue-process runs',
  start(qdir, command) {
    let stopping = false;
    let runs = 0;
    let idleRuns = 0;
    const log = path.join(path.dirname(qdir), 'log');
    const loop = (async () => {
      while (!stopping) {
        const before = readLog(log).length;
        const r = await fspl(['queue-process', '-q', qdir, command], { timeoutMs: 30_000 });
        expect(r.code, r.stderr).toBe(0);
        runs++;
        if (readLog(log).length === before) idleRuns++;
      }
    })();
    return {
      async stop() {
        stopping = true;
        await loop;
        return { runs, idleRuns };
      },
    };
  },
};

/** One long-running `fspl queue-process --watch`, stopped with SIGTERM (file system events or polling). */
function watcher(name: string, extra: string[]): Processor {
  return {
    name,
    start(qdir, command) {
      const { child, done } = startFspl(['queue-process', '-q', qdir, '--watch', ...extra, command], {
        timeoutMs: 120_000,
      });
      return {
        async stop() {
          child.kill('SIGTERM');
          const r = await done;
          expect(r.code, r.stderr).toBe(0);
          expect(r.stderr).not.toMatch(/Error/);
          return { runs: 1, idleRuns: 0 };
        },
      };
    },
  };
}

/**
 * The processors every scenario runs against: they start before the first job arrives; the
 * scenarios wait for nextseq to reach JOBS + 1 before calling stop().
 */
const PROCESSORS: Processor[] = [
  repeatedRuns,
  watcher('queue-process --watch (file system events)', []),
  watcher('queue-process --watch --poll-interval 0.05', ['--poll-interval', '0.05']),
];

type Arrival = 'random order' | 'reverse order';

async function scenario(processor: Processor, arrival: Arrival, rng: Rng) {
  const dir = tempDir();
  const qdir = path.join(dir, 'q');
  const q = Queue.init(qdir);
  const log = path.join(dir, 'log');
  const command = recorder(dir, log);
  // Packets wait in a sibling directory on the same file system, then each is renamed into
  // jobs/ under a job file name: complete the moment it appears.
  const incoming = path.join(dir, 'incoming');
  fs.mkdirSync(incoming);
  for (let s = 1; s <= JOBS; s++)
    fs.writeFileSync(path.join(incoming, String(s)), packet(s, Buffer.alloc(rng.int(0, 2048), s)));
  const order =
    arrival === 'random order'
      ? rng.shuffle(Array.from({ length: JOBS }, (_, i) => i + 1))
      : Array.from({ length: JOBS }, (_, i) => JOBS - i);

  const run = processor.start(qdir, command);
  let waits = 0;
  for (const s of order) {
    await sleep(rng.int(0, 40));
    fs.renameSync(
      path.join(incoming, String(s)),
      path.join(q.jobsDir, `fspl-arrival-${String(s).padStart(3, '0')}-${rng.int(0, 1e9)}.fspl`),
    );
    waits++;
  }
  const nextseq = () => Number(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8'));
  await waitFor(() => nextseq() === JOBS + 1, 'every job to be processed', 60_000, 10);
  const { runs, idleRuns } = await run.stop();

  const ran = readLog(log);
  const figures = {
    processor: processor.name,
    arrival,
    jobs: JOBS,
    arrivals: waits,
    runs,
    runsThatFoundNothingToDo: idleRuns,
    executions: ran.length,
    ranTwice: ran.length - new Set(ran).size,
    outOfOrder: ran.filter((s, i) => s !== i + 1).length,
    lost: JOBS - new Set(ran).size,
    filesLeftInJobs: ls(q.jobsDir).length,
    nextseq: nextseq(),
  };
  expect(ran).toEqual(Array.from({ length: JOBS }, (_, i) => i + 1));
  expect(ls(q.jobsDir)).toEqual([]);
  return figures;
}

for (const processor of PROCESSORS) {
  describe(`out-of-order arrival, processed by ${processor.name}`, () => {
    for (const arrival of ['random order', 'reverse order'] as const) {
      test(`jobs 1..${JOBS} arrive in ${arrival}: each runs once, in sequence order`, {
        timeout: 120_000,
      }, async () => {
        const name = `out-of-order-${processor.name.replace(/\W+/g, '-')}-${arrival.replace(/\W+/g, '-')}`;
        const rng = rngFor(name);
        record(name, rng.seed, await scenario(processor, arrival, rng));
      });
    }
  });
}
