import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type CommandType,
  DuplicateSeqError,
  ExecError,
  encodeHeader,
  JobFailedError,
  LockedError,
  type PacketHeader,
  processFd,
  processQueue,
  Queue,
  SeqOverflowError,
} from '../../src/lowlevel.js';
import { tempDir } from '../helpers.js';

function packet(seq: bigint, opts: { payload?: string; cmd?: CommandType; secs?: bigint } = {}): Buffer {
  const h: PacketHeader = {
    seq,
    ctime: { secs: opts.secs ?? 1700000000n, nanos: 0 },
    cmd: opts.cmd ?? {
      kind: 'Command',
      params: [Buffer.from(`p${seq}`)],
      env: [[Buffer.from('WHO'), Buffer.from(`w${seq}`)]],
    },
  };
  return Buffer.concat([encodeHeader(h), Buffer.from(opts.payload ?? `payload ${seq}\n`)]);
}

/** A queue, a log file and a recording command that fails for the sequence numbers in FAIL. */
function setup() {
  const dir = tempDir();
  const q = Queue.init(path.join(dir, 'q'));
  const log = path.join(dir, 'log');
  const script = path.join(dir, 'rec.sh');
  fs.writeFileSync(
    script,
    `#!/bin/sh\nprintf '%s|%s|%s|%s|%s\\n' "$FSPL_SEQ" "$*" "$FSPL_SET_WHO" "$FSPL_JOB_FILENAME" ` +
      `"$(cat)" >> ${log}\ncase " $FAIL " in *" $FSPL_SEQ "*) exit 3;; esac\nexit 0\n`,
    { mode: 0o755 },
  );
  const lines = () =>
    (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []).map((l) => l.split('|'));
  return { q, log, script, lines };
}

describe('processQueue', () => {
  it('runs jobs in sequence order from nextseq, passing params, env and the payload', async () => {
    const { q, script, lines } = setup();
    for (const s of [3n, 1n, 2n, 5n]) q.writeBuffer(packet(s));
    const r = await processQueue(q, { command: script, params: ['cli'], allowJobParams: true });
    expect(r).toEqual({ processed: 3, succeeded: 3, failed: 0 });
    expect(lines().map((l) => l.slice(0, 3).concat(l[4]!))).toEqual([
      ['1', 'cli p1', 'w1', 'payload 1'],
      ['2', 'cli p2', 'w2', 'payload 2'],
      ['3', 'cli p3', 'w3', 'payload 3'],
    ]);
    expect(q.getNext()).toBe(4n);
    expect((await q.list()).map((j) => j.header.seq)).toEqual([5n]);
  });

  it('leaves job params out without allowJobParams', async () => {
    const { q, script, lines } = setup();
    q.writeBuffer(packet(1n));
    await processQueue(q, { command: script });
    expect(lines()[0]![1]).toBe('');
  });

  it('Retry stops at a failure and keeps the job; Delete and Leave go on', async () => {
    process.env.FAIL = '2';
    try {
      for (const onError of ['retry', 'delete', 'leave'] as const) {
        const { q, script } = setup();
        for (const s of [1n, 2n, 3n]) q.writeBuffer(packet(s));
        const p = processQueue(q, { command: script, onError });
        if (onError === 'retry') {
          await expect(p).rejects.toThrow(JobFailedError);
          expect(q.getNext()).toBe(2n);
          expect((await q.list()).map((j) => j.header.seq)).toEqual([2n, 3n]);
        } else {
          expect(await p).toEqual({ processed: 3, succeeded: 2, failed: 1 });
          expect(q.getNext()).toBe(4n);
          expect((await q.list()).map((j) => j.header.seq)).toEqual(onError === 'leave' ? [2n] : []);
        }
      }
    } finally {
      delete process.env.FAIL;
    }
  });

  it('NOP succeeds, Fail fails, neverDelete keeps files, maxJobs limits', async () => {
    const { q, script, lines } = setup();
    q.writeBuffer(packet(1n, { cmd: { kind: 'NOP' } }));
    q.writeBuffer(packet(2n, { cmd: { kind: 'Fail' } }));
    q.writeBuffer(packet(3n));
    expect(await processQueue(q, { command: script, maxJobs: 1, neverDelete: true })).toEqual({
      processed: 1,
      succeeded: 1,
      failed: 0,
    });
    expect((await q.list()).length).toBe(3);
    await expect(processQueue(q, { command: script })).rejects.toThrow(/Fail packet/);
    expect(await processQueue(q, { command: script, onError: 'delete' })).toEqual({
      processed: 2,
      succeeded: 1,
      failed: 1,
    });
    expect(lines().map((l) => l[0])).toEqual(['3']);
    // Job 1 was kept by neverDelete and is now behind nextseq: ignored, not re-run.
    expect((await q.list()).map((j) => j.header.seq)).toEqual([1n]);
    expect(q.getNext()).toBe(4n);
  });

  it('timestamp order runs everything by ctime and leaves nextseq alone', async () => {
    const { q, script, lines } = setup();
    q.writeBuffer(packet(7n, { secs: 30n }));
    q.writeBuffer(packet(9n, { secs: 10n }));
    q.writeBuffer(packet(7n, { secs: 20n }));
    await processQueue(q, { command: script, orderBy: 'timestamp' });
    expect(lines().map((l) => l[0])).toEqual(['9', '7', '7']);
    expect(q.getNext()).toBe(1n);
  });

  it('refuses duplicate sequence numbers in sequence order', async () => {
    const { q, script } = setup();
    q.writeBuffer(packet(1n));
    q.writeBuffer(packet(4n));
    q.writeBuffer(packet(4n));
    await expect(processQueue(q, { command: script })).rejects.toThrow(DuplicateSeqError);
    expect(q.getNext()).toBe(1n);
  });

  it('saves output to FILE.out with SaveBoth, even for NOP jobs', async () => {
    const { q } = setup();
    const a = q.writeBuffer(packet(1n));
    const b = q.writeBuffer(packet(2n, { cmd: { kind: 'NOP' } }));
    await processQueue(q, { command: 'sh', params: ['-c', 'echo out; echo err >&2'], outputTo: 'saveboth' });
    expect(fs.readFileSync(q.jobPath(`${a}.out`), 'utf8')).toBe('out\nerr\n');
    expect(fs.readFileSync(q.jobPath(`${b}.out`), 'utf8')).toBe('');
  });

  it(
    'SaveBoth never follows a JOB.out planted in jobs/: the ' +
      'job fails, the link target is untouched, the job stays',
    async () => {
      const { q } = setup();
      const a = q.writeBuffer(packet(1n));
      const target = path.join(tempDir(), 'authorized_keys');
      fs.writeFileSync(target, 'ssh-ed25519 AAAA mine\n');
      fs.symlinkSync(target, q.jobPath(`${a}.out`));
      await expect(
        processQueue(q, { command: 'sh', params: ['-c', 'echo ssh-ed25519 EVIL'], outputTo: 'saveboth' }),
      ).rejects.toThrow(/will not write its output to .*\.out: it is a symbolic link/);
      expect(fs.readFileSync(target, 'utf8')).toBe('ssh-ed25519 AAAA mine\n');
      expect(q.getNext()).toBe(1n);
      expect(fs.existsSync(q.jobPath(a))).toBe(true);
    },
  );

  it('kills a command at the timeout and counts it as a failure', async () => {
    const { q } = setup();
    q.writeBuffer(packet(1n));
    await expect(processQueue(q, { command: 'sleep', params: ['10'], timeout: 0 })).rejects.toThrow(/timed out/);
    expect(q.getNext()).toBe(1n);
  });

  it('a command that cannot start is an error whatever onError says, and nothing advances', async () => {
    const { q } = setup();
    q.writeBuffer(packet(1n));
    await expect(processQueue(q, { command: '/nonexistent/cmd', onError: 'delete' })).rejects.toThrow(ExecError);
    expect(q.getNext()).toBe(1n);
    expect((await q.list()).length).toBe(1);
  });

  it('holds the lock while it runs', async () => {
    const { q } = setup();
    q.writeBuffer(packet(1n));
    const running = processQueue(q, { command: 'sleep', params: ['0.3'] });
    await new Promise((r) => setTimeout(r, 100));
    expect(() => q.getNext()).toThrow(LockedError);
    await running;
    expect(q.getNext()).toBe(2n);
  });

  it('does not wrap nextseq at 2^64-1', async () => {
    const { q, script } = setup();
    q.setNext(18446744073709551615n);
    q.writeBuffer(packet(18446744073709551615n));
    await expect(processQueue(q, { command: script })).rejects.toThrow(SeqOverflowError);
  });

  it('through a decoder: streams the payload, and a failing decoder fails the job', async () => {
    const { q, script, lines } = setup();
    const gz = (b: Buffer) => execFileSync('gzip', ['-c'], { input: b });
    fs.writeFileSync(path.join(q.jobsDir, 'fspl-1.fspl'), gz(packet(1n, { payload: 'x'.repeat(300000) })));
    // A packet followed by garbage gzip data: zcat prints the packet, then exits non-zero.
    fs.writeFileSync(path.join(q.jobsDir, 'fspl-2.fspl'), Buffer.concat([gz(packet(2n)), Buffer.from('garbage')]));
    const dq = Queue.open(q.dir, { decoder: 'zcat' });
    await expect(processQueue(dq, { command: script })).rejects.toThrow(/Decoder "zcat" exited with status/);
    expect(lines()[0]![4]).toBe('x'.repeat(300000));
    expect(q.getNext()).toBe(2n);
  });
});

describe('processQueue stopped by its signal or its interrupt', () => {
  /** A queue of jobs 1-3 whose command says it started (a file), then waits for $GO. */
  function waiting() {
    const { q, log } = setup();
    for (const s of [1n, 2n, 3n]) q.writeBuffer(packet(s));
    const dir = path.dirname(log);
    const started = path.join(dir, 'started');
    const go = path.join(dir, 'go');
    const params = [
      '-c',
      `cat > /dev/null; echo $FSPL_SEQ >> ${started}; while [ ! ` +
        `-e ${go} ]; do sleep 0.02; done; echo $FSPL_SEQ >> ${log}`,
    ];
    const until = async (cond: () => boolean) => {
      while (!cond()) await new Promise((r) => setTimeout(r, 10));
    };
    return { q, log, go, params, runningJob: () => until(() => fs.existsSync(started)) };
  }

  it('signal: the running job finishes and is recorded, no other starts', async () => {
    const { q, log, go, params, runningJob } = waiting();
    const signal = new AbortController();
    const run = processQueue(q, { command: 'sh', params, signal: signal.signal });
    await runningJob();
    signal.abort();
    fs.writeFileSync(go, '');
    expect(await run).toEqual({ processed: 1, succeeded: 1, failed: 0 });
    expect([fs.readFileSync(log, 'utf8'), q.getNext()]).toEqual(['1\n', 2n]);
  });

  it(
    'interrupt: the running job is stopped and stays in the ' +
      'queue, even under onError delete; its end event says so',
    async () => {
      const { q, log, params, runningJob } = waiting();
      const interrupt = new AbortController();
      const ends: unknown[] = [];
      const run = processQueue(q, {
        command: 'sh',
        params,
        onError: 'delete',
        interrupt: interrupt.signal,
        onEvent: (e) => e.type === 'end' && ends.push(e),
      });
      await runningJob();
      interrupt.abort();
      expect(await run).toEqual({ processed: 0, succeeded: 0, failed: 0 });
      expect([fs.existsSync(log), q.getNext(), (await q.list()).length]).toEqual([false, 1n, 3]);
      expect(ends).toEqual([
        {
          type: 'end',
          seq: 1n,
          filename: expect.any(String),
          ok: false,
          why: 'command was stopped before it finished',
          interrupted: true,
        },
      ]);
    },
  );

  it(
    'stopTimeout: a job still running that long after the ' + 'signal is interrupted; a function sees its signal abort',
    async () => {
      const { q, params, runningJob } = waiting();
      const signal = new AbortController();
      const run = processQueue(q, { command: 'sh', params, signal: signal.signal, stopTimeout: 0.05 });
      await runningJob();
      signal.abort();
      expect(await run).toEqual({ processed: 0, succeeded: 0, failed: 0 });
      expect(q.getNext()).toBe(1n);

      const fnSignal = new AbortController();
      let reason: unknown;
      const fnRun = processQueue(q, {
        signal: fnSignal.signal,
        stopTimeout: 0.05,
        run: async (job) => {
          fnSignal.abort();
          await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
          reason = job.signal.reason;
          throw reason;
        },
      });
      expect(await fnRun).toEqual({ processed: 0, succeeded: 0, failed: 0 });
      expect([String(reason), q.getNext(), (await q.list()).length]).toEqual(['Error: interrupted', 1n, 3]);
    },
  );

  it('rejects a stopTimeout that is not a number of seconds', async () => {
    const { q } = setup();
    await expect(processQueue(q, { command: 'true', stopTimeout: -1 })).rejects.toThrow(
      /processQueue: stopTimeout: expected a number of seconds/,
    );
  });
});

describe('processQueue after a run killed while finishing a job', () => {
  /** Leave the note a killed run would have left, as it would have left it. */
  function killedWhileFinishing(q: Queue, note: string): void {
    fs.writeFileSync(path.join(q.dir, 'nextseq.lock'), `${note}\n`);
  }

  it(
    'killed before nextseq moved: moves it past the ' + 'finished job and deletes it, without running it again',
    async () => {
      const { q, script, lines } = setup();
      const first = q.writeBuffer(packet(1n));
      q.writeBuffer(packet(2n));
      killedWhileFinishing(q, `S 1 ${first}`);
      expect(await processQueue(q, { command: script })).toEqual({ processed: 1, succeeded: 1, failed: 0 });
      expect(lines().map((l) => l[0])).toEqual(['2']);
      expect(q.getNext()).toBe(3n);
      expect(fs.readdirSync(q.jobsDir)).toEqual([]);
      expect(fs.readFileSync(path.join(q.dir, 'nextseq.lock'), 'utf8')).toBe('');
    },
  );

  it('killed after nextseq moved, before the unlink: deletes the spent job file', async () => {
    const { q, script, lines } = setup();
    const first = q.writeBuffer(packet(1n));
    q.writeBuffer(packet(2n));
    q.setNext(2n);
    killedWhileFinishing(q, `S 1 ${first}`);
    await processQueue(q, { command: script });
    expect(lines().map((l) => l[0])).toEqual(['2']);
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
  });

  it('timestamp order: deletes the finished job file', async () => {
    const { q, script, lines } = setup();
    const first = q.writeBuffer(packet(7n));
    killedWhileFinishing(q, `T 7 ${first}`);
    expect(await processQueue(q, { command: script, orderBy: 'timestamp' })).toEqual({
      processed: 0,
      succeeded: 0,
      failed: 0,
    });
    expect(lines()).toEqual([]);
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
  });

  it('ignores a note naming a file that is gone, a job above nextseq, or nonsense', async () => {
    for (const note of ['S 1 fspl-gone.fspl', 'S 5 FILE', 'garbage', 'S 1 ../nextseq']) {
      const { q, script, lines } = setup();
      const file = q.writeBuffer(packet(5n));
      q.writeBuffer(packet(1n));
      killedWhileFinishing(q, note.replace('FILE', file));
      await processQueue(q, { command: script });
      expect(
        lines().map((l) => l[0]),
        note,
      ).toEqual(['1']);
      expect(fs.readdirSync(q.jobsDir), note).toHaveLength(1);
      expect(q.getNext(), note).toBe(2n);
    }
  });

  it('notes only a job whose file is to be deleted, and empties the lock file at the end', async () => {
    for (const neverDelete of [false, true]) {
      const { q, script } = setup();
      const first = q.writeBuffer(packet(1n));
      q.writeBuffer(packet(2n));
      const notes: string[] = [];
      await processQueue(q, {
        command: script,
        neverDelete,
        onEvent: (e) => {
          if (e.type === 'start') notes.push(fs.readFileSync(path.join(q.dir, 'nextseq.lock'), 'utf8').split('\n')[0]!);
        },
      });
      // What the lock file holds as job 2 starts: job 1's note, unless job 1 was to be kept.
      expect(notes).toEqual(['', neverDelete ? '' : `S 1 ${first}`]);
      expect(fs.readFileSync(path.join(q.dir, 'nextseq.lock'), 'utf8')).toBe('');
    }
  });
});

describe('processFd (stdin-process)', () => {
  it('reads only the header and hands the rest of the descriptor to the command', async () => {
    const dir = tempDir();
    const f = path.join(dir, 'p.fspl');
    fs.writeFileSync(f, packet(5n, { payload: 'rest of it' }));
    const out = path.join(dir, 'out');
    const fd = fs.openSync(f, 'r');
    try {
      await processFd(fd, {
        command: 'sh',
        params: ['-c', `cat > ${out}; echo "$FSPL_SEQ $FSPL_JOB_FILENAME" >> ${out}`],
      });
    } finally {
      fs.closeSync(fd);
    }
    expect(fs.readFileSync(out, 'utf8')).toBe('rest of it5 \n');
  });

  it('interrupt stops the command: JobFailedError, the job said to be interrupted', async () => {
    const dir = tempDir();
    const f = path.join(dir, 'p.fspl');
    fs.writeFileSync(f, packet(5n));
    const fd = fs.openSync(f, 'r');
    const interrupt = new AbortController();
    try {
      const run = processFd(fd, {
        command: 'sleep',
        params: ['300'],
        interrupt: interrupt.signal,
        onStart: () => setTimeout(() => interrupt.abort(), 10),
      });
      await expect(run).rejects.toThrow(
        new JobFailedError('Job 5 interrupted (command was stopped before it finished)'),
      );
    } finally {
      fs.closeSync(fd);
    }
  });

  it('with ignorePayload gives the command /dev/null, not the packet', async () => {
    const dir = tempDir();
    const f = path.join(dir, 'p.fspl');
    fs.writeFileSync(f, packet(5n, { payload: 'secret' }));
    const out = path.join(dir, 'out');
    const fd = fs.openSync(f, 'r');
    try {
      await processFd(fd, { command: 'sh', params: ['-c', `cat > ${out}`], ignorePayload: true });
    } finally {
      fs.closeSync(fd);
    }
    expect(fs.readFileSync(out, 'utf8')).toBe('');
  });
});
