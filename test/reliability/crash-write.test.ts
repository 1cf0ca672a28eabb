/**
 * Crash while writing: `fspl queue-write` and `fspl prepare | fspl queue-write` are killed with
 * SIGKILL at random points while they move large packets.
 *
 * Promise checked: a file named fspl-*.fspl in jobs/ is always a complete packet (an interrupted
 * write leaves at most a tmp-fspl-*.tmp, which every reader ignores); the sender's seqfile always
 * holds a valid number and never goes backwards.
 */

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { decodeHeader } from '../../src/packet/codec.js';
import { Queue } from '../../src/queue/queue.js';
import { parseSeqfileText } from '../../src/sys/seq-text.js';
import {
  envFor,
  fsplBin,
  HAVE_REF,
  isJobName,
  killGroup,
  ls,
  packet,
  REF_BIN,
  type Rng,
  record,
  rngFor,
  sleep,
  startFspl,
  tempDir,
  waitFor,
} from './common.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const verdicts = new Map<string, boolean>();

/** Check every file in jobs/: job files must be complete packets (each file is read once). */
function audit(jobsDir: string, complete: (data: Buffer) => boolean) {
  let jobs = 0;
  let partial = 0;
  let temps = 0;
  for (const n of ls(jobsDir)) {
    const p = path.join(jobsDir, n);
    if (isJobName(n)) {
      jobs++;
      // A job file never changes once named, so one look is enough.
      let ok = verdicts.get(p);
      if (ok === undefined) verdicts.set(p, (ok = complete(fs.readFileSync(p))));
      if (!ok) partial++;
    } else if (n.startsWith('tmp-fspl-') && n.endsWith('.tmp')) temps++;
  }
  return { jobs, partial, temps };
}

/** Time of a run, from the moment a tmp file shows up in jobs/ to the process's exit. */
async function calibrate(qdir: string, stdinFile: string): Promise<number> {
  const jobs = path.join(qdir, 'jobs');
  const run = startFspl(['queue-write', '-q', qdir], { stdin: { file: stdinFile } });
  let exited = false;
  run.child.once('exit', () => (exited = true));
  await waitFor(() => exited || ls(jobs).some((n) => n.startsWith('tmp-fspl-')), 'the temporary file', 30_000, 1);
  const t0 = Date.now();
  const r = await run.done;
  expect(r.code, r.stderr).toBe(0);
  return Math.max(5, Date.now() - t0);
}

/** Kill at a random moment: any time from the start, or once the temporary file exists. */
async function killAtRandom(
  rng: Rng,
  child: import('node:child_process').ChildProcess,
  jobsDir: string,
  window: number,
): Promise<'anytime' | 'while-writing'> {
  let exited = false;
  child.once('exit', () => (exited = true));
  if (rng.next() < 0.3) {
    await sleep(rng.int(0, 250 + window));
    killGroup(child);
    return 'anytime';
  }
  await waitFor(
    () => exited || ls(jobsDir).some((n) => n.startsWith('tmp-fspl-') && !seenTemps.has(n)),
    'the temporary file',
    30_000,
    1,
  );
  await sleep(rng.int(0, window));
  killGroup(child);
  return 'while-writing';
}
const seenTemps = new Set<string>();

describe('crash during queue-write', () => {
  test('queue-write killed -9 at random points while copying an 8 MiB packet: never a partial job file', {
    timeout: 120_000,
  }, async () => {
    const rng = rngFor('crash-queue-write');
    const dir = tempDir();
    const qdir = path.join(dir, 'q');
    const q = Queue.init(qdir);
    const pkt = packet(1, Buffer.alloc(8 * MiB, 0x5a));
    const src = path.join(dir, 'packet');
    fs.writeFileSync(src, pkt);
    const digest = sha(pkt);
    const window = await calibrate(qdir, src);
    for (const n of ls(q.jobsDir)) fs.unlinkSync(q.jobPath(n));

    const ROUNDS = 20;
    let completed = 0;
    const how = { anytime: 0, 'while-writing': 0 };
    for (let i = 0; i < ROUNDS; i++) {
      for (const n of ls(q.jobsDir)) if (n.startsWith('tmp-fspl-')) seenTemps.add(n);
      const run = startFspl(['queue-write', '-q', qdir], { stdin: { file: src } });
      how[await killAtRandom(rng, run.child, q.jobsDir, window)]++;
      const r = await run.done;
      if (r.signal !== 'SIGKILL') {
        expect(r.code, r.stderr).toBe(0);
        completed++;
      }
      const a = audit(q.jobsDir, (d) => d.length === pkt.length && sha(d) === digest);
      expect(a.partial, `round ${i + 1}: partial job files`).toBe(0);
    }
    const end = audit(q.jobsDir, (d) => d.length === pkt.length && sha(d) === digest);
    // Readers skip the leftovers: every listed job is a complete packet.
    const listed = await q.list();
    expect(listed.length).toBe(end.jobs);

    // A slow sender: the packet arrives through a pipe in 64 KiB pieces and the writer is killed
    // after a random number of them, so the temporary file is always partly written.
    const PIPE_ROUNDS = 8;
    let pipeKills = 0;
    for (let i = 0; i < PIPE_ROUNDS; i++) {
      const run = startFspl(['queue-write', '-q', qdir], { stdin: 'pipe' });
      const sink = run.child.stdin!;
      const pieces = rng.int(1, Math.floor(pkt.length / (64 * 1024)) - 1);
      for (let k = 0; k < pieces; k++) {
        if (!sink.write(pkt.subarray(k * 64 * 1024, (k + 1) * 64 * 1024)))
          await new Promise((r) => sink.once('drain', r));
      }
      await waitFor(
        () =>
          ls(q.jobsDir).some(
            (n) => n.startsWith('tmp-fspl-') && !seenTemps.has(n) && fs.statSync(q.jobPath(n)).size > 0,
          ),
        'data in the temporary file',
        30_000,
        1,
      );
      killGroup(run.child);
      const r = await run.done;
      expect(r.signal).toBe('SIGKILL');
      pipeKills++;
      for (const n of ls(q.jobsDir)) if (n.startsWith('tmp-fspl-')) seenTemps.add(n);
      expect(audit(q.jobsDir, (d) => d.length === pkt.length && sha(d) === digest).partial, `pipe round ${i + 1}`).toBe(
        0,
      );
    }
    const final = audit(q.jobsDir, (d) => d.length === pkt.length && sha(d) === digest);
    record('crash-queue-write', rng.seed, {
      packetBytes: pkt.length,
      kills: ROUNDS - completed + pipeKills,
      killsAnytime: how.anytime,
      killsWhileWriting: how['while-writing'],
      killsMidTransferFromAPipe: pipeKills,
      writesThatCompletedBeforeTheirKill: completed,
      killedAfterTheRename: final.jobs - completed,
      completeJobFiles: final.jobs,
      partialJobFiles: final.partial,
      tempFilesLeft: final.temps,
    });
    expect(final.partial).toBe(0);
    // A kill that lands after the rename finds the job complete and committed.
    expect(final.jobs).toBeGreaterThanOrEqual(completed);
  });
});

describe('crash during prepare | queue-write', () => {
  test('the pipeline killed -9 at random points: seqfile never damaged or moved back, never a partial job', {
    timeout: 120_000,
  }, async () => {
    const rng = rngFor('crash-prepare');
    const dir = tempDir();
    const qdir = path.join(dir, 'q');
    const q = Queue.init(qdir);
    const input = path.join(dir, 'input');
    const payload = Buffer.alloc(8 * MiB, 0x33);
    fs.writeFileSync(input, payload);
    const sf = path.join(dir, 'sender.seq');
    const node = process.execPath;
    const pipeline =
      `'${node}' '${fsplBin()}' prepare -s '${sf}' -i '${input}` +
      `' | '${node}' '${fsplBin()}' queue-write -q '${qdir}'`;
    const start = () => {
      const child = spawn('/bin/sh', ['-c', pipeline], { env: envFor(), stdio: 'ignore', detached: true });
      const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
        child.once('close', (code, signal) => r({ code, signal })),
      );
      return { child, done };
    };
    /** A complete job: a valid header, then exactly the payload. */
    const complete = (d: Buffer) => {
      try {
        const { length } = decodeHeader(d);
        return d.length - length === payload.length && d.subarray(length).equals(payload);
      } catch {
        return false;
      }
    };
    const readSeq = () => {
      if (!fs.existsSync(sf)) return 1;
      const v = parseSeqfileText(fs.readFileSync(sf, 'utf8'));
      expect(v, `seqfile content ${JSON.stringify(fs.readFileSync(sf, 'utf8'))}`).toBeDefined();
      return Number(v);
    };
    // Calibrate: a whole uninterrupted run.
    const t0 = Date.now();
    const cal = await start().done;
    expect(cal.code).toBe(0);
    const total = Date.now() - t0;

    const ROUNDS = 20;
    let prev = readSeq();
    let backwards = 0;
    let damaged = 0;
    let completed = 0;
    let seqfileTemps = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const run = start();
      await sleep(rng.int(0, total));
      killGroup(run.child);
      const r = await run.done;
      if (r.signal !== 'SIGKILL' && r.code === 0) completed++;
      const v = readSeq();
      if (v < prev) backwards++;
      expect(v, `round ${i + 1}: the seqfile moved from ${prev} to ${v}`).toBeGreaterThanOrEqual(prev);
      expect(v - prev, `round ${i + 1}: one prepare takes at most one number`).toBeLessThanOrEqual(1);
      prev = v;
      if (fs.existsSync(`${sf}.temp`)) seqfileTemps++;
      const a = audit(q.jobsDir, complete);
      if (a.partial) damaged++;
      expect(a.partial, `round ${i + 1}: partial job files`).toBe(0);
    }
    const jobs = await q.list();
    const seqs = jobs.map((j) => Number(j.header.seq));
    expect(new Set(seqs).size, 'distinct sequence numbers').toBe(seqs.length);
    for (const s of seqs) expect(s).toBeLessThan(prev);
    const end = audit(q.jobsDir, complete);
    record('crash-prepare', rng.seed, {
      payloadBytes: payload.length,
      kills: ROUNDS - completed,
      pipelinesThatCompletedBeforeTheirKill: completed,
      seqfileDamaged: 0,
      seqfileBackwards: backwards,
      seqfileTempLeftAfterAKill: seqfileTemps,
      numbersTaken: prev - 1,
      jobsCommitted: end.jobs,
      numbersUsedWithoutAJob: prev - 1 - end.jobs,
      partialJobFiles: end.partial,
      tempFilesLeftInJobs: end.temps,
    });
    expect(damaged).toBe(0);
  });

  test(
    'a sender that dies alone mid-payload: queue-write sees an ' +
      'ordinary end of input and commits what came (both implementations)',
    async () => {
      // Measured, not a promise: a packet carries no payload length, so no receiver can tell a cut
      // payload from a short one. Both implementations commit it; the header is intact.
      const dir = tempDir();
      const pkt = packet(1, Buffer.alloc(MiB, 0x41));
      const cut = pkt.subarray(0, pkt.length >> 1);
      const outcome: Record<string, unknown> = {};
      for (const impl of HAVE_REF ? (['ours', 'ref'] as const) : (['ours'] as const)) {
        const qdir = path.join(dir, impl);
        Queue.init(qdir);
        const r = await startFspl(['queue-write', '-q', qdir], { stdin: cut, impl, timeoutMs: 30_000 }).done;
        const jobs = ls(path.join(qdir, 'jobs')).filter(isJobName);
        outcome[impl] = {
          exit: r.code,
          committedJobs: jobs.length,
          committedBytes: jobs.length ? fs.statSync(path.join(qdir, 'jobs', jobs[0]!)).size : 0,
        };
      }
      record('sender-dies', undefined, {
        packetBytes: pkt.length,
        bytesSent: cut.length,
        ...outcome,
        reference: HAVE_REF ? REF_BIN : 'not installed',
      });
      expect(outcome.ours).toEqual({ exit: 0, committedJobs: 1, committedBytes: cut.length });
    },
  );
});
