/**
 * Crash during processing: `fspl queue-process` over a few hundred jobs is killed with SIGKILL
 * at random moments, many times, then run once more to the end. Most kills take its whole
 * process group, the running command included, as a crash of the machine or the service would;
 * a fifth kill fspl alone (as the OOM killer might), and its command, orphaned, finishes.
 *
 * Promise checked: no job lost; first executions in strict sequence order; a job runs again only
 * if it was in flight at a kill (at-least-once); no job file or temporary file left; nextseq
 * exactly past the last job.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { Queue } from '../../src/queue/queue.js';
import { parseSeqfileText } from '../../src/sys/seq-text.js';
import {
  fspl,
  groupAlive,
  isJobName,
  killGroup,
  ls,
  packet,
  readLog,
  record,
  recorder,
  rngFor,
  sleep,
  startFspl,
  tempDir,
  waitFor,
} from './common.js';

const JOBS = 400;
const KILLS = 50;

interface Round {
  /** nextseq before the run. */
  from: number;
  /** Sequence numbers the command recorded during the run. */
  ran: number[];
  /** nextseq after the kill. */
  after: number;
  how: 'anytime' | 'while-processing';
  /** Only fspl was killed: its command ran on. */
  fsplOnly: boolean;
}

test(`${KILLS} kills -9 of queue-process over ${JOBS} jobs: none lost, in order, only the job in flight re-run`, {
  timeout: 180_000,
}, async () => {
  const rng = rngFor('crash-process');
  const dir = tempDir();
  const qdir = path.join(dir, 'q');
  const log = path.join(dir, 'log');
  const q = Queue.init(qdir);
  const fileOf = new Map<number, string>();
  // Written in random order (directory order must not matter), payloads of random sizes.
  for (const seq of rng.shuffle(Array.from({ length: JOBS }, (_, i) => i + 1))) {
    fileOf.set(seq, q.writeBuffer(packet(seq, Buffer.alloc(rng.int(0, 8192), seq % 256))));
  }
  const command = recorder(dir, log);
  const nextseq = () => {
    const v = parseSeqfileText(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8'));
    expect(v, 'nextseq must always hold a valid number').toBeDefined();
    return Number(v);
  };

  const rounds: Round[] = [];
  let seqfileTempsSeen = 0; // nextseq.temp present right after a kill (killed while writing nextseq)
  let finishedByNextRun = 0; // killed after the job, before nextseq moved: the next run moved it
  let spentFilesRemovedByNextRun = 0; // killed after nextseq moved, before the unlink
  const pendingNote = () => {
    const m = /^S (\d+) (\S+)[^\n]*\n/.exec(fs.readFileSync(path.join(qdir, 'nextseq.lock'), 'utf8'));
    return m && fs.existsSync(q.jobPath(m[2]!)) ? { seq: Number(m[1]) } : undefined;
  };
  let finishedOnTheirOwn = 0;
  let next = 1;
  while (rounds.length < KILLS && next <= JOBS) {
    const logBefore = readLog(log).length;
    const fsplOnly = rng.next() < 0.2;
    const run = startFspl(['queue-process', '-q', qdir, command], { keepGroup: fsplOnly });
    let exited = false;
    run.child.once('exit', () => (exited = true));
    // A quarter of the kills land at any moment from the start (start-up, scan, jobs), within the
    // first 8 jobs of the run. The rest land while the k-th job of the run (k random, 1 to 6) is
    // under way: 0 to 8 ms after its command has started, which covers a whole job cycle
    // (command, nextseq update, unlink). Kills are tied to progress, not to the clock alone, so a
    // slow or busy machine gets the same number of kills out of the same jobs.
    const how: Round['how'] = rng.next() < 0.25 ? 'anytime' : 'while-processing';
    if (how === 'anytime') {
      const deadline = Date.now() + rng.int(0, 250);
      await waitFor(
        () => exited || Date.now() >= deadline || readLog(log).length >= logBefore + 8,
        'a moment to kill',
        30_000,
        1,
      );
    } else {
      const target = logBefore + rng.int(1, 6);
      await waitFor(() => exited || readLog(log).length >= target, 'the jobs of the run', 30_000, 1);
      await sleep(rng.int(0, 8));
    }
    if (fsplOnly) {
      run.child.kill('SIGKILL');
      // The orphaned command (still in fspl's process group) finishes before the next run.
      await waitFor(() => !groupAlive(run.child.pid!), 'the orphaned command to finish', 30_000, 2);
    } else {
      killGroup(run.child);
    }
    const r = await run.done;
    if (r.signal !== 'SIGKILL') {
      // It finished before the kill (the queue ran dry): not a crash.
      expect(r.code, r.stderr).toBe(0);
      finishedOnTheirOwn++;
      next = nextseq();
      break;
    }
    const ran = readLog(log).slice(logBefore);
    let after = nextseq();
    // Killed while finishing a job: the note in the lock file names it, and the next run
    // completes it (moves nextseq past it if needed, deletes its spent file) without running it.
    const pending = pendingNote();
    if (pending && pending.seq === after) {
      after += 1;
      finishedByNextRun++;
    } else if (pending && pending.seq < after) {
      spentFilesRemovedByNextRun++;
    }
    rounds.push({ from: next, ran, after, how, fsplOnly });
    // Each run starts exactly at nextseq (re-running the job a kill left in flight) and goes up by one.
    expect(ran, `round ${rounds.length}: jobs run`).toEqual(ran.map((_, i) => next + i));
    // nextseq is past every job run, except at most the last one, which was in flight.
    const allowed = ran.length === 0 ? [next] : [next + ran.length, next + ran.length - 1];
    expect(
      allowed,
      `round ${rounds.length}: nextseq ${after} after running ${JSON.stringify(ran)} from ${next}`,
    ).toContain(after);
    if (fs.existsSync(path.join(qdir, 'nextseq.temp'))) seqfileTempsSeen++;
    next = after;
  }

  // The final, clean run.
  const final = await fspl(['queue-process', '-q', qdir, command], { timeoutMs: 60_000 });
  expect(final.code, final.stderr).toBe(0);
  // Nothing but, when the last kill landed while a job was being finished, the line saying that
  // this run completed it.
  expect(
    final.stderr
      .split('\n')
      .filter((l) => l && !/^ INFO fspl::process: Removing ".*": job \d+ was finished by an interrupted run$/.test(l)),
  ).toEqual([]);

  const all = readLog(log);
  const firsts: number[] = [];
  const seen = new Set<number>();
  for (const s of all) {
    if (!seen.has(s)) firsts.push(s);
    seen.add(s);
  }
  const lost = Array.from({ length: JOBS }, (_, i) => i + 1).filter((s) => !seen.has(s));
  const outOfOrder = firsts.filter((s, i) => s !== i + 1).length;
  const inFlight = rounds.filter((r) => r.ran.length > 0 && r.after === r.from + r.ran.length - 1);
  const reRuns = all.length - seen.size;
  const leftJobs = ls(q.jobsDir);
  const temps = [
    ...ls(qdir).filter((n) => !['jobs', 'nextseq', 'nextseq.lock'].includes(n)),
    ...leftJobs.filter((n) => !isJobName(n)),
  ];
  const figures = {
    jobs: JOBS,
    kills: rounds.length,
    killsAnytime: rounds.filter((r) => r.how === 'anytime').length,
    killsWhileProcessing: rounds.filter((r) => r.how === 'while-processing').length,
    killsOfFsplAloneCommandOrphaned: rounds.filter((r) => r.fsplOnly).length,
    killsBeforeAnyJobOfTheRun: rounds.filter((r) => r.ran.length === 0).length,
    killsWithJobInFlight: inFlight.length,
    killsWhileWritingNextseq: seqfileTempsSeen,
    killsWhileFinishingAJobCompletedByTheNextRun: finishedByNextRun,
    killsBetweenNextseqAndUnlinkCleanedByTheNextRun: spentFilesRemovedByNextRun,
    executions: all.length,
    lost: lost.length,
    outOfOrder,
    reRuns,
    reRunsNotOfTheJobInFlight: reRuns - inFlight.length,
    leftoverJobFiles: leftJobs.filter(isJobName).length,
    leftoverTempFiles: temps.length,
    finalNextseq: nextseq(),
    runsThatFinishedBeforeTheirKill: finishedOnTheirOwn,
  };
  record('crash-process', rng.seed, figures);

  expect(rounds.length, 'kills').toBe(KILLS);
  expect(lost, 'lost jobs').toEqual([]);
  expect(firsts, 'first executions in sequence order').toEqual(Array.from({ length: JOBS }, (_, i) => i + 1));
  // Every re-run is of a job a kill left in flight: once more per such kill, never otherwise.
  expect(reRuns).toBe(inFlight.length);
  for (const s of seen) {
    const kills = inFlight.filter((r) => r.after === s).length;
    expect(all.filter((x) => x === s).length, `executions of job ${s}`).toBe(1 + kills);
  }
  expect(temps, 'temporary files left').toEqual([]);
  expect(leftJobs.filter(isJobName), 'job files left').toEqual([]);
  expect(fs.readFileSync(path.join(qdir, 'nextseq.lock'), 'utf8'), 'lock file emptied at the end').toBe('');
  expect(nextseq(), 'final nextseq').toBe(JOBS + 1);
});
