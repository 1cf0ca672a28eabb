/**
 * Retries and the failed-jobs queue under `kill -9` (issue 41): `queue-process --retries 1
 * --failed-to F` over 200 jobs of which 20 always fail, killed (its whole process group) at
 * random moments, then run to the end; and one job that always fails, tried 6 times across kills.
 *
 * Promise checked: no job lost or doubled; first runs in strict order; a job runs again only if
 * it was in flight at a kill; each failing job in F exactly once, with its facts; the tries
 * counted across kills (at most the running try lost, the job never skipped); queue-retry puts
 * them back and they run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { Queue } from '../../src/queue/queue.js';
import { fspl, killGroup, lines, packet, record, rngFor, sleep, startFspl, tempDir } from './common.js';

const JOBS = 200;
const KILLS = 10;
const failing = (seq: number) => seq % 10 === 0;

/** A command that logs `SEQ ATTEMPT` and fails for the failing numbers unless FSPL_OK_NOW is set. */
function command(dir: string, log: string): string {
  const p = path.join(dir, 'job.sh');
  fs.writeFileSync(
    p,
    `#!/bin/sh\necho "$FSPL_SEQ $FSPL_JOB_ATTEMPT" >> '${log}'\ncat > /dev/null\n` +
      `[ -z "$FSPL_OK_NOW" ] && [ $(( FSPL_SEQ % 10 )) = 0 ] && exit 3\nexit 0\n`,
    { mode: 0o755 },
  );
  return p;
}

const runsOf = (log: string) =>
  (fs.existsSync(log) ? lines(fs.readFileSync(log, 'utf8')) : []).map(
    (l) => l.split(' ').map(Number) as [number, number],
  );

test(`${KILLS} kills -9 of queue-process --retries 1 --failed-to ` +
  `over ${JOBS} jobs (20 failing): none lost or doubled`, {
  timeout: 180_000,
}, async () => {
  const rng = rngFor('crash-retries');
  const dir = tempDir();
  const qdir = path.join(dir, 'q');
  const F = path.join(dir, 'F');
  const log = path.join(dir, 'log');
  const q = Queue.init(qdir);
  for (const seq of rng.shuffle(Array.from({ length: JOBS }, (_, i) => i + 1))) q.writeBuffer(packet(seq));
  const cmd = command(dir, log);
  const args = ['queue-process', '-q', qdir, '--retries', '1', '--retry-delay', '0', '--failed-to', F, cmd];
  let kills = 0;
  for (let i = 0; i < KILLS; i++) {
    const { child, done } = startFspl(args);
    await sleep(rng.int(30, 400));
    killGroup(child);
    await done;
    kills++;
  }
  const last = await fspl(args, { timeoutMs: 120_000 });
  expect(last.code, last.stderr).toBe(0);

  const runs = runsOf(log);
  const first: number[] = [];
  const seen = new Set<number>();
  for (const [seq] of runs) if (!seen.has(seq)) seen.add(seq), first.push(seq);
  expect(first, 'first runs in strict order, none skipped').toEqual(Array.from({ length: JOBS }, (_, i) => i + 1));
  const count = new Map<number, number>();
  for (const [seq] of runs) count.set(seq, (count.get(seq) ?? 0) + 1);
  let extra = 0;
  for (let s = 1; s <= JOBS; s++) extra += count.get(s)! - (failing(s) ? 2 : 1);
  expect(extra, 'a job runs again only if it was in flight at a kill').toBeLessThanOrEqual(kills);
  expect(extra).toBeGreaterThanOrEqual(0);

  expect(fs.readdirSync(q.jobsDir), 'nothing left in the queue').toEqual([]);
  expect(q.getNext()).toBe(BigInt(JOBS + 1));
  expect(fs.readdirSync(qdir).sort(), 'no journal or record left').toEqual(['jobs', 'nextseq', 'nextseq.lock']);
  const moved = await Queue.open(F).list();
  expect(
    moved.map((j) => Number(j.header.failure!.seq)),
    'each failing job in F once, in order',
  ).toEqual(Array.from({ length: JOBS / 10 }, (_, i) => (i + 1) * 10));
  expect(moved.map((j) => j.header.seq)).toEqual(Array.from({ length: JOBS / 10 }, (_, i) => BigInt(i + 1)));
  for (const j of moved) expect(j.header.failure!.attempts).toBeGreaterThanOrEqual(2);

  // queue-retry puts them back (new numbers, in order), and with the cause fixed they run.
  const back = await fspl(['queue-retry', '-q', F, '--to', qdir]);
  expect(back.code, back.stderr).toBe(0);
  fs.writeFileSync(log, '');
  const rerun = await fspl(['queue-process', '-q', qdir, cmd], { env: { FSPL_OK_NOW: '1' } });
  expect(rerun.code, rerun.stderr).toBe(0);
  expect(runsOf(log).map(([s]) => s)).toEqual(Array.from({ length: JOBS / 10 }, (_, i) => JOBS + 1 + i));
  expect(fs.readdirSync(path.join(F, 'jobs'))).toEqual([]);
  record('crash-retries', undefined, { jobs: JOBS, kills, extraRuns: extra });
});

test('the tries of a job that always fails are counted across kills -9: at most the running try lost, never skipped', {
  timeout: 120_000,
}, async () => {
  const rng = rngFor('crash-retries-count');
  const dir = tempDir();
  const qdir = path.join(dir, 'q');
  const F = path.join(dir, 'F');
  const log = path.join(dir, 'log');
  const q = Queue.init(qdir);
  q.writeBuffer(packet(10)); // numbered 10: a failing one
  q.setNext(10n);
  const cmd = command(dir, log);
  const args = [
    'queue-process',
    '-q',
    qdir,
    '--retries',
    '5',
    '--retry-delay',
    '0.05',
    '--retry-max-delay',
    '0.1',
    '--failed-to',
    F,
    '--watch',
    cmd,
  ];
  for (let i = 0; i < 8 && fs.readdirSync(q.jobsDir).length > 0; i++) {
    const { child, done } = startFspl(args);
    await sleep(rng.int(20, 200));
    killGroup(child);
    await done;
  }
  const { child, done } = startFspl(args);
  const end = Date.now() + 30_000;
  while (fs.readdirSync(q.jobsDir).length > 0 && Date.now() < end) await sleep(20);
  killGroup(child);
  await done;
  const attempts = runsOf(log).map(([, a]) => a);
  expect(attempts[0]).toBe(1);
  for (let i = 1; i < attempts.length; i++) {
    // The next try's number is the last one's (it was running at a kill: counted again) or one more.
    expect(attempts[i]! - attempts[i - 1]!, `attempts ${attempts.join(',')}`).toBeGreaterThanOrEqual(0);
    expect(attempts[i]! - attempts[i - 1]!, `attempts ${attempts.join(',')}`).toBeLessThanOrEqual(1);
  }
  expect(attempts.at(-1)).toBe(6);
  const moved = await Queue.open(F).list();
  expect(moved.length).toBe(1);
  expect(moved[0]!.header.failure).toMatchObject({ seq: 10n, attempts: 6 });
});
