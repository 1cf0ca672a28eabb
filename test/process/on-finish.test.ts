/**
 * Finish hooks (src/process/on-finish.ts): each outcome calls the hook once, after the job's
 * record, with its variables; a failing or hanging hook changes no record.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createLogger,
  encodeHeader,
  type PacketHeader,
  processQueue,
  processQueues,
  Queue,
  RetryDueError,
} from '../../src/lowlevel.js';
import { tempDir } from '../helpers.js';

function packet(seq: bigint, cmd: PacketHeader['cmd'] = { kind: 'Command', params: [], env: [] }): Buffer {
  const h: PacketHeader = { seq, ctime: { secs: 1700000000n, nanos: 0 }, cmd };
  return Buffer.concat([encodeHeader(h), Buffer.from(`payload ${seq}\n`)]);
}

/**
 * A queue of: 1 succeeds, 2 exits 3, 3 hangs (its timeout), 4 a Fail packet, 5 a NOP; and a hook that logs its
 * variables.
 */
function setup() {
  const dir = tempDir();
  const q = Queue.init(path.join(dir, 'q'));
  q.writeBuffer(packet(1n));
  q.writeBuffer(packet(2n));
  q.writeBuffer(packet(3n));
  q.writeBuffer(packet(4n, { kind: 'Fail' }));
  q.writeBuffer(packet(5n, { kind: 'NOP' }));
  const script = path.join(dir, 'job.sh');
  fs.writeFileSync(
    script,
    '#!/bin/sh\ncat > /dev/null\ncase "$FSPL_SEQ" in 2) exit 3;; 3) exec sleep 30;; esac\nexit 0\n',
    { mode: 0o755 },
  );
  const log = path.join(dir, 'hook.log');
  const hook =
    `echo "$FSPL_SEQ|$FSPL_JOB_OUTCOME|$FSPL_JOB_EXIT_STATUS|$FSPL_JOB_ATTEMPT` +
    `|$FSPL_JOB_DURATION_MS|$FSPL_JOB_QUEUEDIR|$FSPL_JOB_FILENAME" >> '${log}'`;
  const calls = () =>
    (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []).map((l) => {
      const [seq, outcome, exit, attempt, ms, queuedir, filename] = l.split('|');
      return { seq, outcome, exit, attempt, ms: Number(ms), queuedir, filename };
    });
  return { dir, q, script, hook, calls };
}

/** What a run recorded: nextseq and the job files left. */
function record(q: Queue) {
  return { next: q.getNext(), jobs: fs.readdirSync(q.jobsDir).length };
}

describe('--on-finish', () => {
  it(
    'success, failure, timeout and a Fail packet each ' + 'call the hook once with their variables; a NOP none',
    async () => {
      const { q, script, hook, calls } = setup();
      const names = new Map((await q.list()).map((e) => [String(e.header.seq), e.filename]));
      const summary = await processQueue(q, {
        command: script,
        timeout: 0.5,
        onError: 'delete',
        onFinish: { command: hook },
      });
      expect(summary).toEqual({ processed: 5, succeeded: 2, failed: 3 });
      const c = calls();
      expect(c.map((x) => [x.seq, x.outcome, x.exit, x.attempt])).toEqual([
        ['1', 'success', '0', '1'],
        ['2', 'failure', '3', '1'],
        ['3', 'timeout', 'signal:KILL', '1'],
        ['4', 'failure', '', '1'],
      ]);
      for (const x of c) {
        expect(x.ms).toBeGreaterThanOrEqual(0);
        expect(x.queuedir).toBe(q.dir);
        expect(x.filename).toBe(names.get(x.seq));
      }
    },
  );

  it('a retry due and a job moved to the failed-jobs queue each call it once', async () => {
    const { dir, q, script, hook, calls } = setup();
    const err = await processQueue(q, {
      command: script,
      retries: 1,
      retryDelay: 60,
      onFinish: { command: hook },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryDueError);
    expect(calls().map((x) => [x.seq, x.outcome, x.exit, x.attempt])).toEqual([
      ['1', 'success', '0', '1'],
      ['2', 'retry', '3', '1'],
    ]);
    const other = setup();
    await processQueue(other.q, {
      command: other.script,
      maxJobs: 2,
      failedTo: path.join(dir, 'F'),
      onFinish: { command: other.hook },
    });
    expect(other.calls().map((x) => [x.seq, x.outcome, x.exit, x.attempt])).toEqual([
      ['1', 'success', '0', '1'],
      ['2', 'moved', '3', '1'],
    ]);
  });

  it('a failing hook, a hanging one (killed at its timeout) and one that can not start change no record', async () => {
    const lines: string[] = [];
    const logger = createLogger('warn', (l) => lines.push(l));
    const run = async (onFinish?: { command: string; timeout?: number }) => {
      const { q, script } = setup();
      const summary = await processQueue(q, {
        command: script,
        timeout: 0.3,
        onError: 'leave',
        logger,
        ...(onFinish && { onFinish }),
      });
      return { summary, ...record(q) };
    };
    const plain = await run();
    expect(plain).toEqual({ summary: { processed: 5, succeeded: 2, failed: 3 }, next: 6n, jobs: 3 });
    expect(await run({ command: 'exit 1' })).toEqual(plain);
    expect(lines.filter((l) => l.includes('Finish hook of job')).length).toBe(4);
    expect(lines.join('\n')).toMatch(/Finish hook of job 1 exited with status 1/);
    expect(await run({ command: 'exec sleep 30', timeout: 0.2 })).toEqual(plain);
    expect(lines.join('\n')).toMatch(/Finish hook of job 1 timed out and was killed/);
    expect(await run({ command: '/nonexistent/hook 2>/dev/null' })).toEqual(plain);
  });

  it('many queues: each job calls the hook once, one at a time', async () => {
    const a = setup();
    const b = setup();
    const log = path.join(a.dir, 'both.log');
    // A hook that notices another running at the same time.
    const hook =
      `mkdir '${a.dir}/busy' || echo overlap >> '${log}'; echo "$FSPL_JOB_QUEUEDIR ` +
      `$FSPL_SEQ" >> '${log}'; sleep 0.05; rmdir '${a.dir}/busy'`;
    await processQueues([a.q.dir, b.q.dir], {
      command: a.script,
      timeout: 0.3,
      onError: 'delete',
      jobs: 2,
      onFinish: { command: hook },
    });
    const lines = fs.readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).not.toContain('overlap');
    expect(lines.sort()).toEqual(
      [
        ...['1', '2', '3', '4'].map((s) => `${a.q.dir} ${s}`),
        ...['1', '2', '3', '4'].map((s) => `${b.q.dir} ${s}`),
      ].sort(),
    );
  });

  it('a function job: its outcome, an empty exit status', async () => {
    const { q, hook, calls } = setup();
    const run = async (job: { seq: bigint }) => {
      if (job.seq === 2n) throw new Error('no');
    };
    await processQueue(q, { run, maxJobs: 2, onError: 'delete', onFinish: { command: hook } });
    expect(calls().map((x) => [x.seq, x.outcome, x.exit, x.attempt])).toEqual([
      ['1', 'success', '', '1'],
      ['2', 'failure', '', '1'],
    ]);
  });

  it('checks its options', async () => {
    const { q, script } = setup();
    await expect(processQueue(q, { command: script, onFinish: { command: ' ' } })).rejects.toThrow(TypeError);
    await expect(processQueue(q, { command: script, onFinish: { command: 'true', timeout: -1 } })).rejects.toThrow(
      RangeError,
    );
    expect(record(q)).toEqual({ next: 1n, jobs: 5 });
  });
});
