/**
 * A queue's jobs chained (src/process/queue-chain.ts): the next job started by the addon as the
 * one before it ends, after its record. Each job must still start only once the one before it is
 * recorded (nextseq past it, its file gone), in order, once; a stop, a limit or a failure must
 * still end the run where it did without chains.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/base/log.js';
import { encodeHeader, JobFailedError, processQueue, Queue } from '../../src/lowlevel.js';
import { loadNative } from '../../src/sys/native.js';
import { tempDir } from '../helpers.js';

function packet(seq: bigint, secs = 1700000000n): Buffer {
  const h = { seq, ctime: { secs, nanos: 0 }, cmd: { kind: 'Command' as const, params: [], env: [] } };
  return Buffer.concat([encodeHeader(h), Buffer.from(`payload ${seq}\n`)]);
}

/**
 * A queue of `n` jobs and a command that logs, as it starts, its number, nextseq, and whether the
 * file of the job before it is still there; it sleeps `sleep` seconds, and fails for the numbers
 * in FAIL.
 */
function setup(n: number, sleep = 0.05, order: 'sequence' | 'timestamp' = 'sequence') {
  const dir = tempDir();
  const q = Queue.init(path.join(dir, 'q'));
  const files: string[] = [];
  for (let s = 1n; s <= BigInt(n); s++) {
    q.writeBuffer(order === 'sequence' ? packet(s) : packet(BigInt(n) + 1n - s, 1700000000n + s));
  }
  for (const f of fs.readdirSync(q.jobsDir)) files.push(f);
  const log = path.join(dir, 'log');
  const script = path.join(dir, 'job.sh');
  fs.writeFileSync(
    script,
    '#!/bin/sh\n' +
      `prev=$(cat '${dir}/prev' 2>/dev/null)\n` +
      `gone=yes; [ -n "$prev" ] && [ -e "$FSPL_JOB_QUEUEDIR/jobs/$prev" ] && gone=no\n` +
      `echo "$FSPL_SEQ $(cat "$FSPL_JOB_QUEUEDIR/nextseq") $gone" >> '${log}'\n` +
      `printf %s "$FSPL_JOB_FILENAME" > '${dir}/prev'\n` +
      `sleep ${sleep}\n` +
      'case " $FAIL " in *" $FSPL_SEQ "*) exit 3;; esac\nexit 0\n',
    { mode: 0o755 },
  );
  const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []);
  const debug: string[] = [];
  const logger = createLogger('debug', (l) => debug.push(l));
  const chained = () => debug.filter((l) => l.includes('started as job')).length;
  return { q, script, lines, logger, chained, files };
}

const HAVE_CHAIN = loadNative()?.chain !== undefined;

describe.skipIf(!HAVE_CHAIN)('queue-process with jobs chained', () => {
  let fail: string | undefined;
  beforeEach(() => {
    fail = process.env.FAIL;
  });
  afterEach(() => {
    if (fail === undefined) delete process.env.FAIL;
    else process.env.FAIL = fail;
  });

  it('each job starts once the one before it is recorded: nextseq at its number, the file before it gone', async () => {
    const { q, script, lines, logger, chained } = setup(10, 0.1);
    const r = await processQueue(q, { command: script, logger });
    expect(r).toEqual({ processed: 10, succeeded: 10, failed: 0 });
    expect(lines()).toEqual(Array.from({ length: 10 }, (_, i) => `${i + 1} ${i + 1} yes`));
    expect(fs.readFileSync(path.join(q.dir, 'nextseq'), 'utf8')).toBe('11\n');
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
    expect(fs.statSync(path.join(q.dir, 'nextseq.lock')).size).toBe(0); // settled
    // The chain is what started most of them (an arming can come too late on a busy machine).
    expect(chained()).toBeGreaterThanOrEqual(5);
  });

  it('events: the end of a job (recorded) before the start of the next', async () => {
    const { q, script, logger } = setup(4, 0.05);
    const events: string[] = [];
    await processQueue(q, { command: script, logger, onEvent: (e) => 'seq' in e && events.push(`${e.type} ${e.seq}`) });
    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3', 'start 4', 'end 4']);
  });

  it('a limit of jobs: the job past it is never started', async () => {
    const { q, script, lines, logger } = setup(5, 0.1);
    const r = await processQueue(q, { command: script, logger, maxJobs: 2 });
    expect(r.processed).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(lines().map((l) => l.split(' ')[0])).toEqual(['1', '2']);
    expect(fs.readFileSync(path.join(q.dir, 'nextseq'), 'utf8')).toBe('3\n');
  });

  it('a stop while a job runs: that job finishes and is recorded, the next never starts', async () => {
    const { q, script, lines, logger } = setup(5, 0.3);
    const stop = new AbortController();
    const r = await processQueue(q, {
      command: script,
      logger,
      signal: stop.signal,
      onEvent: (e) => {
        // Job 3 was opened ahead and chained to job 2 by then (0.2 s in).
        if (e.type === 'start' && e.seq === 2n) setTimeout(() => stop.abort(), 200);
      },
    });
    expect(r.processed).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(lines().map((l) => l.split(' ')[0])).toEqual(['1', '2']);
    expect(fs.readFileSync(path.join(q.dir, 'nextseq'), 'utf8')).toBe('3\n');
  });

  it('a job that fails: the run stops there, nothing after it started, it stays in the queue', async () => {
    process.env.FAIL = '3';
    const { q, script, lines, logger, files } = setup(5, 0.1);
    await expect(processQueue(q, { command: script, logger })).rejects.toThrow(JobFailedError);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(lines().map((l) => l.split(' ')[0])).toEqual(['1', '2', '3']);
    expect(fs.readFileSync(path.join(q.dir, 'nextseq'), 'utf8')).toBe('3\n');
    expect(fs.readdirSync(q.jobsDir).sort()).toEqual(
      files.filter((f) => fs.existsSync(path.join(q.jobsDir, f))).sort(),
    );
    expect(fs.readdirSync(q.jobsDir)).toHaveLength(3);
  });

  it('timestamp order: in order of time, each once, the file before it gone', async () => {
    const { q, script, lines, logger } = setup(6, 0.1, 'timestamp');
    const r = await processQueue(q, { command: script, logger, orderBy: 'timestamp' });
    expect(r.processed).toBe(6);
    // Written 6..1 by number, timed 1..6: run by time.
    expect(lines().map((l) => `${l.split(' ')[0]} ${l.split(' ')[2]}`)).toEqual([
      '6 yes',
      '5 yes',
      '4 yes',
      '3 yes',
      '2 yes',
      '1 yes',
    ]);
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
  });

  it('not chained: with a timeout, or a finish hook (which runs between two jobs)', async () => {
    const a = setup(3, 0.1);
    await processQueue(a.q, { command: a.script, logger: a.logger, timeout: 30 });
    expect(a.chained()).toBe(0);
    expect(a.lines()).toHaveLength(3);
    const b = setup(3, 0.1);
    await processQueue(b.q, { command: b.script, logger: b.logger, onFinish: { command: 'true' } });
    expect(b.chained()).toBe(0);
    expect(b.lines()).toHaveLength(3);
  });

  it('jobs kept (neverDelete): chained, nextseq moved job by job, every file left', async () => {
    const { q, script, lines, logger, chained } = setup(4, 0.1);
    await processQueue(q, { command: script, logger, neverDelete: true });
    expect(lines().map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual(['1 1', '2 2', '3 3', '4 4']);
    expect(fs.readdirSync(q.jobsDir)).toHaveLength(4);
    expect(chained()).toBeGreaterThanOrEqual(1);
  });

  it('startAfterEnd: no job starts before the end event of the one before it has been given', async () => {
    // The listener holds the event loop a while, as a slow one would: a chained next job runs meanwhile.
    const startedAtEnds = async (startAfterEnd: boolean) => {
      const { q, script, lines, logger, chained } = setup(5, 0.05);
      const seen: number[] = [];
      const onEvent = (e: { type: string }) => {
        if (e.type !== 'end') return;
        const until = Date.now() + 100;
        while (Date.now() < until) {
          // busy
        }
        seen.push(lines().length);
      };
      await processQueue(q, { command: script, logger, onEvent, startAfterEnd });
      return { seen, chained: chained() };
    };
    const apart = await startedAtEnds(true);
    expect(apart).toEqual({ seen: [1, 2, 3, 4, 5], chained: 0 });
    const chained = await startedAtEnds(false);
    expect(chained.chained).toBeGreaterThanOrEqual(1);
    expect(chained.seen.some((n, i) => n > i + 1)).toBe(true);
  });
});
