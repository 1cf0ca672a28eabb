/**
 * Retries with a back-off (src/process/retry.ts, retry-run.ts): a failing job tried again, the
 * queue waiting for it meanwhile, its tries counted in the queue directory, FSPL_JOB_ATTEMPT.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  encodeHeader,
  type PacketHeader,
  processQueue,
  processQueues,
  Queue,
  RetryDueError,
} from '../../src/lowlevel.js';
import { ATTEMPTS_FILE, parseAttempts, readAttempts, retriesFor, retryDelayMs } from '../../src/process/retry.js';
import { outputTail } from '../../src/process/retry-run.js';
import { tempDir } from '../helpers.js';

function packet(seq: bigint, extra: Partial<PacketHeader> = {}): Buffer {
  const h: PacketHeader = {
    seq,
    ctime: { secs: 1700000000n, nanos: 0 },
    cmd: { kind: 'Command', params: [], env: [] },
    ...extra,
  };
  return Buffer.concat([encodeHeader(h), Buffer.from(`payload ${seq}\n`)]);
}

/** A queue of jobs 1..n and a command that logs `SEQ ATTEMPT TIME_MS` and fails while FAILS_<SEQ> > attempt - 1. */
function setup(n: number, fails: Record<number, number>) {
  const dir = tempDir();
  const q = Queue.init(path.join(dir, 'q'));
  for (let s = 1n; s <= BigInt(n); s++) q.writeBuffer(packet(s));
  const log = path.join(dir, 'log');
  const script = path.join(dir, 'job.sh');
  const cases = Object.entries(fails)
    .map(([seq, k]) => `${seq}) [ "$FSPL_JOB_ATTEMPT" -le ${k} ] && exit 3;;`)
    .join(' ');
  fs.writeFileSync(
    script,
    `#!/bin/sh\necho "$FSPL_SEQ $FSPL_JOB_ATTEMPT $(date +%s%3N)" >> ${log}\n` +
      `cat > /dev/null\ncase "$FSPL_SEQ" in ${cases} esac\nexit 0\n`,
    {
      mode: 0o755,
    },
  );
  const runs = () =>
    (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []).map((l) => {
      const [seq, attempt, ms] = l.split(' ');
      return { seq: Number(seq), attempt: Number(attempt), ms: Number(ms) };
    });
  return { dir, q, script, runs };
}

describe('retries', () => {
  it('policy: the packet may ask for fewer retries, never more; the delay doubles up to the maximum', () => {
    const policy = { retries: 3, delayMs: 100, maxDelayMs: 350 };
    const h = (retries?: bigint): PacketHeader => ({
      seq: 1n,
      ctime: { secs: 0n, nanos: 0 },
      cmd: { kind: 'NOP' },
      retries,
    });
    expect(retriesFor(policy, h())).toBe(3);
    expect(retriesFor(policy, h(1n))).toBe(1);
    expect(retriesFor(policy, h(9n))).toBe(3);
    expect([1, 2, 3, 4].map((t) => retryDelayMs(policy, t))).toEqual([100, 200, 350, 350]);
    expect(parseAttempts('7 2 1700000000000 fspl-x.fspl\n')).toEqual({
      seq: 7n,
      tries: 2,
      dueMs: 1700000000000,
      filename: 'fspl-x.fspl',
    });
    expect(parseAttempts('7 2 x fspl-x.fspl\n')).toBeUndefined();
  });

  it(
    'watching: a job failing twice then passing with retries ' + '3 runs three times, in order, the delays respected',
    async () => {
      const { q, script, runs } = setup(3, { 2: 2 });
      const stop = new AbortController();
      const done = processQueue(q, {
        command: script,
        retries: 3,
        retryDelay: 0.2,
        watch: true,
        signal: stop.signal,
        onEvent: (e) => {
          if (e.type === 'end' && e.seq === 3n) stop.abort();
        },
      });
      await done;
      const r = runs();
      expect(r.map((x) => [x.seq, x.attempt])).toEqual([
        [1, 1],
        [2, 1],
        [2, 2],
        [2, 3],
        [3, 1],
      ]);
      // At least the delay (0.2 s, then 0.4 s), with slack for the clock's grain.
      expect(r[2]!.ms - r[1]!.ms).toBeGreaterThanOrEqual(190);
      expect(r[3]!.ms - r[2]!.ms).toBeGreaterThanOrEqual(390);
      expect(fs.existsSync(path.join(q.dir, ATTEMPTS_FILE))).toBe(false);
      expect(q.getNext()).toBe(4n);
    },
  );

  it(
    'one pass: a failure with a retry due ends the run ' + 'with RetryDueError, the tries kept for the next run',
    async () => {
      const { q, script, runs } = setup(2, { 1: 1 });
      const err = await processQueue(q, { command: script, retries: 2, retryDelay: 0.3 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RetryDueError);
      expect((err as RetryDueError).message).toMatch(
        /^Job 1 failed \(command exited with status 3\); try 2 of 3 is due at \S+Z; stopping/,
      );
      expect((err as RetryDueError).dueAt.getTime()).toBeGreaterThan(Date.now());
      expect(readAttempts(q.dir)).toMatchObject({ seq: 1n, tries: 1 });
      // Before it is due: the job does not run, and nothing after it either.
      const early = await processQueue(q, { command: script, retries: 2, retryDelay: 0.3 }).catch((e: unknown) => e);
      expect((early as Error).message).toMatch(/^Job 1 waits for its next try; try 2 of 3 is due at/);
      expect(runs().length).toBe(1);
      await new Promise((r) => setTimeout(r, 350));
      await processQueue(q, { command: script, retries: 2, retryDelay: 0.3 });
      expect(runs().map((x) => [x.seq, x.attempt])).toEqual([
        [1, 1],
        [1, 2],
        [2, 1],
      ]);
    },
  );

  it('tries used up without a failed-jobs queue: onError decides, as without retries', async () => {
    const { q, script, runs } = setup(2, { 1: 9 });
    await processQueue(q, { command: script, retries: 1, retryDelay: 0, onError: 'delete' });
    expect(runs().map((x) => [x.seq, x.attempt])).toEqual([
      [1, 1],
      [1, 2],
      [2, 1],
    ]);
    expect(q.getNext()).toBe(3n);
    expect(fs.existsSync(path.join(q.dir, ATTEMPTS_FILE))).toBe(false);
  });

  it(
    "a packet's own retries (fewer than the run's) are " + 'its limit; a function executor sees FSPL_JOB_ATTEMPT',
    async () => {
      const dir = tempDir();
      const q = Queue.init(path.join(dir, 'q'));
      q.writeBuffer(packet(1n, { retries: 1n }));
      const seen: string[] = [];
      await processQueue(q, {
        retries: 5,
        retryDelay: 0,
        onError: 'leave',
        run: async (job) => {
          seen.push(job.variables.FSPL_JOB_ATTEMPT!);
          throw new Error('no');
        },
      });
      expect(seen).toEqual(['1', '2']);
    },
  );

  it(
    'without retries nothing changes: no FSPL_JOB_ATTEMPT, ' + 'no attempts file, the failure stops the queue',
    async () => {
      const dir = tempDir();
      const q = Queue.init(path.join(dir, 'q'));
      q.writeBuffer(packet(1n));
      const seen: Array<string | undefined> = [];
      await expect(
        processQueue(q, {
          run: async (job) => {
            seen.push(job.variables.FSPL_JOB_ATTEMPT);
            throw new Error('no');
          },
        }),
      ).rejects.toThrow(/Job 1 failed/);
      expect(seen).toEqual([undefined]);
      expect(fs.readdirSync(q.dir).sort()).toEqual(['jobs', 'nextseq', 'nextseq.lock']);
    },
  );

  it('many queues, one pass: a queue with a retry due stops (its result says when), the others go on', async () => {
    const a = setup(2, { 1: 1 });
    const b = setup(2, {});
    // One command for both: it fails job 1 of the queue whose directory is a's.
    const script = path.join(a.dir, 'either.sh');
    fs.writeFileSync(
      script,
      `#!/bin/sh\ncat > /dev/null\n[ "$FSPL_JOB_QUEUEDIR" = '${a.q.dir}' ] && [ "$FSPL_SEQ" = 1 ] && exit 3\nexit 0\n`,
      { mode: 0o755 },
    );
    const r = await processQueues([a.q.dir, b.q.dir], { command: script, retries: 1, retryDelay: 60 });
    expect(r.queues.map((x) => x.state)).toEqual(['stopped', 'done']);
    expect(r.queues[0]!.error).toBeInstanceOf(RetryDueError);
    expect(b.q.getNext()).toBe(3n);
  });

  it('--failed-to with --output-to SaveBoth: the moved packet keeps the last lines of its output', async () => {
    const dir = tempDir();
    const q = Queue.init(path.join(dir, 'q'));
    q.writeBuffer(packet(1n));
    const script = path.join(dir, 'noisy.sh');
    fs.writeFileSync(
      script,
      '#!/bin/sh\ncat > /dev/null\nfor i in $(seq 1 30); do echo "line $i" >&2; done\nexit 3\n',
      { mode: 0o755 },
    );
    await processQueue(q, { command: script, outputTo: 'saveboth', failedTo: path.join(dir, 'F') });
    const [moved] = await Queue.open(path.join(dir, 'F')).list();
    const tail = moved!.header.failure!.tail!.split('\n');
    expect(tail.length).toBe(20);
    expect(tail.at(-1)).toBe('line 30');
    expect(tail[0]).toBe('line 11');
    // A long output: read from its end only, the cut first line left out.
    const big = path.join(dir, 'big.out');
    fs.writeFileSync(big, `${'x'.repeat(10_000)}\nend\n`);
    expect(outputTail(big)).toBe('end');
    expect(outputTail(path.join(dir, 'none'))).toBeUndefined();
  });

  it('many queues, watching: a queue waits for its retry (a timer) while the others go on', async () => {
    const a = setup(2, { 1: 1 });
    const b = setup(3, {});
    const script = path.join(a.dir, 'either.sh');
    const log = path.join(a.dir, 'both.log');
    fs.writeFileSync(
      script,
      `#!/bin/sh\ncat > /dev/null\necho "$FSPL_JOB_QUEUEDIR $FSPL_SEQ $FSPL_JOB_ATTEMPT ` +
        `$(date +%s%3N)" >> ${log}\n[ "$FSPL_JOB_QUEUEDIR" = '${a.q.dir}' ] && [ ` +
        `"$FSPL_SEQ" = 1 ] && [ "$FSPL_JOB_ATTEMPT" = 1 ] && exit 3\nexit 0\n`,
      { mode: 0o755 },
    );
    const stop = new AbortController();
    let ends = 0;
    await processQueues([a.q.dir, b.q.dir], {
      command: script,
      retries: 1,
      retryDelay: 0.3,
      watch: true,
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === 'end' && e.outcome !== 'retry' && ++ends === 5) stop.abort(); // 2 in a, 3 in b
      },
    });
    const runs = fs
      .readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    const of = (dir: string) => runs.filter((r) => r[0] === dir);
    expect(of(a.q.dir).map((r) => `${r[1]}/${r[2]}`)).toEqual(['1/1', '1/2', '2/1']);
    expect(of(b.q.dir).map((r) => r[1])).toEqual(['1', '2', '3']);
    const [failed, retried] = of(a.q.dir);
    expect(Number(retried![3]) - Number(failed![3]), 'at least the delay').toBeGreaterThanOrEqual(290);
    expect(a.q.getNext()).toBe(3n);
    expect(b.q.getNext()).toBe(4n);
  });

  it('timestamp order: the failing job stays next, nothing after it runs until its retry', async () => {
    const dir = tempDir();
    const q = Queue.init(path.join(dir, 'q'));
    // Numbers out of time order: 3 is the oldest, then 1, then 2.
    for (const [seq, secs] of [
      [1n, 20n],
      [2n, 30n],
      [3n, 10n],
    ] as const)
      q.writeBuffer(
        Buffer.concat([
          encodeHeader({ seq, ctime: { secs, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } }),
        ]),
      );
    const seen: string[] = [];
    const run = async (job: { variables: Record<string, string> }) => {
      seen.push(`${job.variables.FSPL_SEQ}/${job.variables.FSPL_JOB_ATTEMPT}`);
      if (job.variables.FSPL_SEQ === '1' && job.variables.FSPL_JOB_ATTEMPT === '1') throw new Error('once');
    };
    const opts = { run, retries: 1, retryDelay: 0.2, orderBy: 'timestamp' as const };
    await expect(processQueue(q, opts)).rejects.toBeInstanceOf(RetryDueError);
    expect(seen).toEqual(['3/1', '1/1']);
    await new Promise((r) => setTimeout(r, 250));
    await processQueue(q, opts);
    // 3 succeeded (its file deleted), then 1's retry, then 2.
    expect(seen).toEqual(['3/1', '1/1', '1/2', '2/1']);
  });
});
