/**
 * Crash during a pass over many queues: `fspl queue-process --queues-in P --jobs 3` over 10 queues
 * of 40 jobs is killed with SIGKILL (its whole process group, the running commands included) at
 * random moments, 20 times, then run once more to the end.
 *
 * Promise checked, for every queue as for one queue alone (crash-process.test.ts): no job lost;
 * first executions in strict sequence order; a job runs again only if it was in flight at a kill,
 * so a kill re-runs at most as many jobs as were running (--jobs); no job or temporary file left;
 * every nextseq exactly past its last job.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { Queue } from '../../src/queue/queue.js';
import { parseSeqfileText } from '../../src/sys/seq-text.js';
import {
  fspl,
  isJobName,
  killGroup,
  ls,
  packet,
  readLog,
  record,
  rngFor,
  sleep,
  startFspl,
  tempDir,
  waitFor,
} from './common.js';

const QUEUES = 10;
const JOBS = 40;
const KILLS = 20;
const WORKERS = 3;

test(`${KILLS} kills -9 of queue-process over ${QUEUES} queues of ${JOBS} jobs, ` +
  `--jobs ${WORKERS}: none lost, each queue in order, only jobs in flight re-run`, {
  timeout: 180_000,
}, async () => {
  const rng = rngFor('crash-many');
  const dir = tempDir();
  const parent = path.join(dir, 'queues');
  fs.mkdirSync(parent);
  const queues = Array.from({ length: QUEUES }, (_, i) => Queue.init(path.join(parent, `q${i}`)));
  for (const q of queues)
    for (const seq of rng.shuffle(Array.from({ length: JOBS }, (_, i) => i + 1))) q.writeBuffer(packet(seq));
  // Each command logs "QUEUE SEQ" (QUEUE as a number: readLog reads numbers, one per line, so two lines a job).
  const log = path.join(dir, 'log');
  const command = path.join(dir, 'record.sh');
  fs.writeFileSync(
    command,
    `#!/bin/sh\nq=$(basename "$FSPL_JOB_QUEUEDIR")\n` +
      `printf '%s\\n%s\\n' "\${q#q}" "$FSPL_SEQ" >> '${log}'\ncat > /dev/null\n`,
    {
      mode: 0o755,
    },
  );
  const executions = (): Array<[number, number]> => {
    const n = readLog(log);
    const out: Array<[number, number]> = [];
    for (let i = 0; i + 1 < n.length; i += 2) out.push([n[i]!, n[i + 1]!]);
    return out;
  };
  const nextseqOf = (q: Queue) => Number(parseSeqfileText(fs.readFileSync(q.seqfilePath, 'utf8')));
  /** A job a killed run was finishing: the next run completes it (crash-process.test.ts). */
  const finishing = (q: Queue) => {
    const m = /^S (\d+) (\S+)\n/.exec(fs.readFileSync(`${q.seqfilePath}.lock`, 'utf8'));
    return m && fs.existsSync(q.jobPath(m[2]!)) ? Number(m[1]) : undefined;
  };

  /** Per kill, the jobs (queue, seq) it left in flight: started in the run, their end not recorded. */
  const inFlight: Array<Array<[number, number]>> = [];
  let kills = 0;
  let next = queues.map(() => 1);
  for (; kills < KILLS; kills++) {
    const before = executions().length;
    const run = startFspl(['queue-process', '--queues-in', parent, '--jobs', String(WORKERS), command]);
    let exited = false;
    run.child.once('exit', () => (exited = true));
    await waitFor(() => exited || executions().length >= before + rng.int(1, 12), 'jobs of the run', 30_000, 1);
    await sleep(rng.int(0, 8));
    killGroup(run.child);
    const r = await run.done;
    if (r.signal !== 'SIGKILL') {
      expect(r.code, r.stderr).toBe(0); // it finished before the kill: not a crash
      break;
    }
    const ran = executions().slice(before);
    const after = queues.map((q) => {
      const n = nextseqOf(q);
      return finishing(q) === n ? n + 1 : n;
    });
    const left: Array<[number, number]> = [];
    for (let i = 0; i < QUEUES; i++) {
      const mine = ran.filter(([q]) => q === i).map(([, s]) => s);
      // Each queue's run started at its nextseq and went up by one.
      expect(mine, `kill ${kills}, queue ${i}`).toEqual(mine.map((_, k) => next[i]! + k));
      const allowed = mine.length === 0 ? [next[i]] : [next[i]! + mine.length, next[i]! + mine.length - 1];
      expect(allowed, `kill ${kills}, queue ${i}: nextseq ${after[i]} after ${JSON.stringify(mine)}`).toContain(
        after[i],
      );
      if (mine.length > 0 && after[i] === next[i]! + mine.length - 1) left.push([i, after[i]!]);
    }
    expect(left.length, `kill ${kills}: jobs in flight`).toBeLessThanOrEqual(WORKERS);
    inFlight.push(left);
    next = after;
  }

  const final = await fspl(['queue-process', '--queues-in', parent, '--jobs', String(WORKERS), command], {
    timeoutMs: 60_000,
  });
  expect(final.code, final.stderr).toBe(0);
  expect(
    final.stderr
      .split('\n')
      .filter((l) => l && !/^ INFO fspl::process: Removing ".*": job \d+ was finished by an interrupted run$/.test(l)),
  ).toEqual([]);

  const all = executions();
  const reRuns = all.length - QUEUES * JOBS;
  for (let i = 0; i < QUEUES; i++) {
    const mine = all.filter(([q]) => q === i).map(([, s]) => s);
    const firsts = [...new Set(mine)];
    expect(firsts, `queue ${i}: first executions in order, none lost`).toEqual(
      Array.from({ length: JOBS }, (_, k) => k + 1),
    );
    for (const s of firsts) {
      const times = inFlight.filter((left) => left.some(([q, x]) => q === i && x === s)).length;
      expect(mine.filter((x) => x === s).length, `queue ${i}, job ${s}: executions`).toBe(1 + times);
    }
    const q = queues[i]!;
    expect(nextseqOf(q), `queue ${i}: nextseq`).toBe(JOBS + 1);
    expect(ls(q.jobsDir), `queue ${i}: files left in jobs/`).toEqual([]);
    expect(
      ls(q.dir).filter((n) => !['jobs', 'nextseq', 'nextseq.lock'].includes(n)),
      `queue ${i}: temporary files`,
    ).toEqual([]);
    expect(ls(q.jobsDir).filter(isJobName)).toEqual([]);
  }
  record('crash-many', rng.seed, {
    queues: QUEUES,
    jobsPerQueue: JOBS,
    workers: WORKERS,
    kills: inFlight.length,
    jobsInFlightAtKills: inFlight.reduce((n, l) => n + l.length, 0),
    executions: all.length,
    reRuns,
  });
  expect(inFlight.length, 'kills').toBe(KILLS);
});
