/**
 * The next job opened while the one before it runs (src/process/job-ahead.ts): the slot alone,
 * then queue runs through processQueue, where a job's command removes or replaces the next job's
 * file, as a person at a shell might while the queue runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeHeader, type PacketHeader, processQueue, Queue } from '../../src/lowlevel.js';
import { JobAhead } from '../../src/process/job-ahead.js';
import { tempDir } from '../helpers.js';

/** What the slot holds in these tests: its closes counted, current until told otherwise. */
function opened(name: string) {
  return {
    name,
    closed: 0,
    isCurrent: true,
    current() {
      return this.isCurrent;
    },
    close() {
      this.closed++;
    },
  };
}

describe('JobAhead', () => {
  const a = { seq: 1 };
  const b = { seq: 2 };

  it('gives what it opened to that job at that try, once', async () => {
    const ahead = new JobAhead<ReturnType<typeof opened>>();
    const o = opened('a');
    let opens = 0;
    ahead.open(a, 1, async () => {
      opens++;
      return o;
    });
    expect(opens).toBe(1);
    await turn();
    expect(ahead.take(a, 1)).toBe(o);
    expect(o.closed).toBe(0);
    expect(ahead.take(a, 1)).toBeUndefined(); // given once
  });

  it('closes what another job, or another try, would take', async () => {
    for (const [entry, attempt] of [
      [b, 1],
      [a, 2],
    ] as const) {
      const ahead = new JobAhead<ReturnType<typeof opened>>();
      const o = opened('a');
      ahead.open(a, 1, async () => o);
      await turn();
      expect(ahead.take(entry, attempt)).toBeUndefined();
      expect(o.closed).toBe(1);
    }
  });

  it('gives nothing whose file was removed or replaced since, and closes it', async () => {
    const ahead = new JobAhead<ReturnType<typeof opened>>();
    const o = opened('a');
    ahead.open(a, undefined, async () => o);
    await turn();
    o.isCurrent = false;
    expect(ahead.take(a, undefined)).toBeUndefined();
    expect(o.closed).toBe(1);
  });

  it('dropped while its open is under way, closes what it opened; a new open drops the one before', async () => {
    const ahead = new JobAhead<ReturnType<typeof opened>>();
    const first = opened('a');
    ahead.open(a, 1, async () => first);
    await turn();
    const second = opened('b');
    ahead.open(b, 1, async () => second);
    expect(first.closed).toBe(1);
    await turn();
    expect(ahead.take(b, 1)).toBe(second);

    const late = opened('b');
    let finish!: () => void;
    ahead.open(b, 1, () => new Promise((resolve) => (finish = () => resolve(late))));
    await turn();
    ahead.drop();
    finish();
    await turn();
    expect(late.closed).toBe(1);
    expect(ahead.take(b, 1)).toBeUndefined();
  });

  it('a failed open leaves the job to its turn, with no unhandled rejection', async () => {
    const ahead = new JobAhead<ReturnType<typeof opened>>();
    ahead.open(a, 1, async () => {
      throw new Error('ENOENT');
    });
    await turn();
    await turn();
    expect(ahead.take(a, 1)).toBeUndefined();
  });
});

function packet(seq: bigint, payload: string): Buffer {
  const h: PacketHeader = {
    seq,
    ctime: { secs: 1700000000n, nanos: 0 },
    cmd: { kind: 'Command', params: [], env: [] },
  };
  return Buffer.concat([encodeHeader(h), Buffer.from(payload)]);
}

/** The descriptors this process holds, once the loop has closed what it was closing (a finished child's pidfd). */
async function openFds(): Promise<string> {
  await turn();
  await turn();
  const target = (f: string) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${f}`);
    } catch {
      return ''; // the listing's own descriptor, closed by now
    }
  };
  return fs
    .readdirSync('/proc/self/fd')
    .map((f) => `${f}:${target(f)}`)
    .filter((f) => !f.endsWith(':'))
    .sort()
    .join(' ');
}

/**
 * A queue of jobs 1..n (payload `pN`) and a command that appends `SEQ PAYLOAD` to a log; job 1's
 * command runs `first` (a shell line; $J2 names job 2's file) before it does.
 */
function setup(n: number, first = ':') {
  const dir = tempDir();
  const q = Queue.init(path.join(dir, 'q'));
  const names = Array.from({ length: n }, (_, i) => q.writeBuffer(packet(BigInt(i + 1), `p${i + 1}`)));
  const log = path.join(dir, 'log');
  const script = path.join(dir, 'job.sh');
  fs.writeFileSync(
    script,
    `#!/bin/sh\nJ2=${JSON.stringify(q.jobPath(names[1]!))}\n[ "$FSPL_SEQ" = 1 ] && { ${first}; }\n` +
      `echo "$FSPL_SEQ $FSPL_JOB_FILENAME $(cat)" >> ${log}\n`,
    { mode: 0o755 },
  );
  const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []);
  return { dir, q, names, script, lines };
}

describe.skipIf(!fs.existsSync('/proc/self/fd'))('a queue run opening its next job ahead', () => {
  // What a process keeps from its first command on (the addon's epoll set of children it waits
  // for, native/fspl_native.c) is there before any test counts descriptors.
  beforeAll(async () => {
    const { q, script } = setup(1);
    await processQueue(q, { command: script });
  });

  it('runs every job with its own payload and variables, and leaves no descriptor open', async () => {
    const { q, names, script, lines } = setup(6);
    const before = await openFds();
    expect(await processQueue(q, { command: script })).toMatchObject({ processed: 6, succeeded: 6 });
    expect(lines()).toEqual(names.map((f, i) => `${i + 1} ${f} p${i + 1}`));
    expect(await openFds()).toBe(before);
  });

  it('leaves no descriptor open when the run stops before the job it opened (maxJobs, a failure)', async () => {
    const { q, script } = setup(4);
    const before = await openFds();
    await processQueue(q, { command: script, maxJobs: 2 });
    expect(await openFds()).toBe(before);
    const failing = setup(4, 'exit 7');
    await expect(processQueue(failing.q, { command: failing.script, onError: 'retry' })).rejects.toThrow(/Job 1/);
    expect(await openFds()).toBe(before);
  });

  it('does not run a job whose file the job before removed: the run stops there, as without it', async () => {
    const { q, script, lines } = setup(3, 'rm "$J2"');
    const before = await openFds();
    await expect(processQueue(q, { command: script })).rejects.toThrow(/ENOENT|No such file/);
    expect(lines().map((l) => l.split(' ')[0])).toEqual(['1']);
    expect(fs.readFileSync(q.seqfilePath, 'utf8')).toBe('2\n');
    expect(await openFds()).toBe(before);
  });

  it('does not run a job from what it opened once a link is put at its name, even to that same file', async () => {
    // A timeout: no chained start, the run's own turn looks at the name (the addon's look: exec-chain.test.ts).
    const { q, script, lines } = setup(3, 'mv "$J2" "$J2.moved" && ln -s "$J2.moved" "$J2"');
    const r = await processQueue(q, { command: script, timeout: 30 }).catch((err: unknown) => err);
    // Its turn opens the name anew, and refuses the link, as a run that never opened it ahead would.
    expect((r as Error).message).toMatch(/it is a symbolic link/);
    expect(lines().map((l) => l.split(' ')[0])).toEqual(['1']);
  });

  it('runs a job that the job before replaced as it now is', async () => {
    const { dir, q, script, lines } = setup(3, `mv ${JSON.stringify('NEW')} "$J2"`);
    // The replacement: job 2 again, another payload, renamed over job 2's name by job 1's command.
    fs.writeFileSync(path.join(dir, 'NEW'), packet(2n, 'replaced'));
    fs.writeFileSync(script, fs.readFileSync(script, 'utf8').replace('"NEW"', JSON.stringify(path.join(dir, 'NEW'))));
    await processQueue(q, { command: script });
    expect(lines().map((l) => l.split(' ').slice(-1)[0])).toEqual(['p1', 'replaced', 'p3']);
  });
});
