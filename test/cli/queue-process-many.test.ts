/**
 * queue-process over many queues through the CLI: -q more than once and --queues-in, --jobs, the
 * exit status and the lines a stopped or locked queue gives, usage errors, and --watch
 * --queues-in stopped by SIGTERM. The library's own tests (test/process/many-queues.test.ts) check the
 * order and the turns in depth; these check that the command line reaches them.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, test } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import { Queue } from '../../src/queue/queue.js';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, memTempDir, ROOT } from '../helpers.js';

function put(q: Queue, seq: number): void {
  q.writeBuffer(encodeHeader(makeHeader({ seq: BigInt(seq), cmd: { kind: 'Command', params: [], env: [] } })));
}

function fspl(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [FSPL_BIN, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Each job logs "start QUEUE SEQ" and "end QUEUE SEQ" around a short sleep. */
const RECORD =
  'echo "start $(basename $FSPL_JOB_QUEUEDIR) $FSPL_SEQ" >> "$LOG"; sleep ' +
  '0.02; echo "end $(basename $FSPL_JOB_QUEUEDIR) $FSPL_SEQ" >> "$LOG"';

function setup(n: number, perQueue: number) {
  const dir = memTempDir();
  const parent = path.join(dir, 'queues');
  fs.mkdirSync(parent);
  const queues = Array.from({ length: n }, (_, i) => {
    const q = Queue.init(path.join(parent, `q${i}`));
    for (let s = 1; s <= perQueue; s++) put(q, s);
    return q;
  });
  const log = path.join(dir, 'log');
  fs.writeFileSync(log, '');
  return { dir, parent, queues, log };
}

const logLines = (log: string) => fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);

describe('queue-process over many queues', () => {
  it('--queues-in with --jobs 3: every job once, each queue in order and one at a time, at most 3 at once', () => {
    const { parent, queues, log } = setup(8, 4);
    const r = fspl(['queue-process', '--queues-in', parent, '--jobs', '3', 'sh', '--', '-c', RECORD], { LOG: log });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const running = new Set<string>();
    let peak = 0;
    const order = new Map<string, number[]>();
    for (const line of logLines(log)) {
      const [what, q, seq] = line.split(' ') as [string, string, string];
      if (what === 'start') {
        expect(running.has(q), `two jobs of ${q} at once`).toBe(false);
        running.add(q);
        peak = Math.max(peak, running.size);
        (order.get(q) ?? order.set(q, []).get(q)!).push(Number(seq));
      } else running.delete(q);
    }
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThan(1);
    for (const q of queues) expect(order.get(path.basename(q.dir))).toEqual([1, 2, 3, 4]);
  });

  it(
    '-q more than once: a failing job stops its queue (exit ' +
      '1, one line for it), a locked queue is skipped with a note',
    () => {
      const { queues, log } = setup(3, 2);
      const [a, b, c] = queues as [Queue, Queue, Queue];
      const lock = spawn('flock', [path.join(c.dir, 'nextseq.lock'), 'sleep', '30'], { stdio: 'ignore' });
      try {
        for (let i = 0; spawnSync('flock', ['-n', path.join(c.dir, 'nextseq.lock'), 'true']).status === 0; i++) {
          if (i > 500) throw new Error('flock did not take the lock');
          spawnSync('sleep', ['0.01']);
        }
        const failInB = `if [ "$(basename $FSPL_JOB_QUEUEDIR)" = q1 ]; then exit 7; fi; ${RECORD}`;
        const r = fspl(['queue-process', '-q', a.dir, '-q', b.dir, '-q', c.dir, 'sh', '--', '-c', failInB], {
          LOG: log,
        });
        expect(r.code).toBe(1);
        const lines = r.stderr.split('\n').filter(Boolean);
        expect(lines).toContainEqual(
          expect.stringMatching(/^ *WARN fspl::process: Skipping queue ".*q2": another processor holds its lock/),
        );
        expect(lines[lines.length - 1]).toMatch(
          /^Error: queue ".*q1" stopped: Job 1 failed \(command exited with status 7\)/,
        );
        expect(lines.filter((l) => l.startsWith('Error:'))).toHaveLength(1);
      } finally {
        lock.kill();
      }
      expect(logLines(log).filter((l) => l.startsWith('end'))).toEqual(['end q0 1', 'end q0 2']);
      expect(fs.readFileSync(b.seqfilePath, 'utf8')).toBe('1\n');
      expect(fs.readFileSync(c.seqfilePath, 'utf8')).toBe('1\n');
    },
  );

  it('reads every queue through the decoder (-d)', () => {
    const { parent, queues } = setup(3, 0);
    for (const q of queues) {
      for (const seq of [1, 2]) {
        const packet = encodeHeader(makeHeader({ seq: BigInt(seq), cmd: { kind: 'Command', params: [], env: [] } }));
        const gz = spawnSync('gzip', ['-c'], {
          input: Buffer.concat([packet, Buffer.from(`${path.basename(q.dir)}-${seq}`)]),
        }).stdout;
        fs.writeFileSync(path.join(q.jobsDir, `fspl-00000000-0000-4000-8000-00000000000${seq}.fspl`), gz);
      }
    }
    const out = path.join(path.dirname(parent), 'out');
    fs.mkdirSync(out);
    const r = fspl(
      [
        'queue-process',
        '--queues-in',
        parent,
        '-d',
        'zcat',
        '--jobs',
        '2',
        'sh',
        '--',
        '-c',
        'cat > "$OUT/$(basename $FSPL_JOB_QUEUEDIR)-$FSPL_SEQ"',
      ],
      { OUT: out },
    );
    expect(r.code, r.stderr).toBe(0);
    const got = fs.readdirSync(out).sort();
    expect(got).toEqual(['q0-1', 'q0-2', 'q1-1', 'q1-2', 'q2-1', 'q2-2']);
    for (const f of got) expect(fs.readFileSync(path.join(out, f), 'utf8')).toBe(f);
  });

  it('a queue without nextseq: made (as the reference) when it has a job, left alone when it has none', () => {
    const { parent, queues, log } = setup(2, 1);
    fs.rmSync(queues[0]!.seqfilePath);
    fs.rmSync(queues[1]!.seqfilePath);
    fs.rmSync(path.join(queues[1]!.jobsDir, fs.readdirSync(queues[1]!.jobsDir)[0]!));
    const r = fspl(['queue-process', '--queues-in', parent, 'sh', '--', '-c', RECORD], { LOG: log });
    expect(r.code, r.stderr).toBe(0);
    expect(logLines(log)).toEqual(['start q0 1', 'end q0 1']);
    expect(fs.readFileSync(queues[0]!.seqfilePath, 'utf8')).toBe('2\n');
    expect(fs.readdirSync(queues[1]!.dir).sort()).toEqual(['jobs', 'nextseq.lock']);
  });

  it('gives the job its own queue in FSPL_JOB_QUEUEDIR, as given', () => {
    const { parent } = setup(2, 1);
    const r = fspl(['queue-process', '--queues-in', parent, 'sh', '--', '-c', 'echo "$FSPL_JOB_QUEUEDIR"']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toEqual([path.join(parent, 'q0'), path.join(parent, 'q1')]);
  });

  it('usage errors: no queue, a bad --jobs, a --queues-in parent that cannot be read', () => {
    expect(fspl(['queue-process', 'true']).code).toBe(2);
    const bad = fspl(['queue-process', '-q', 'a', '-q', 'b', '--jobs', '0', 'true']);
    expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([
      2,
      "error: invalid value '0' for --jobs: expected a whole number, at least 1",
    ]);
    const missing = fspl(['queue-process', '--queues-in', '/nonexistent/parent', 'true']);
    expect([missing.code, missing.stderr]).toEqual([
      1,
      'Error: Cannot read the queues of --queues-in: No such file or directory: /nonexistent/parent\n',
    ]);
  });

  it(
    '--queues-in that finds no queue says what is there ' + 'instead: exit 1 in one pass, a warning when watching',
    async () => {
      const dir = memTempDir();
      const q = Queue.init(path.join(dir, 'q')).dir;
      const itself = fspl(['queue-process', '--queues-in', q, 'true']);
      expect([itself.code, itself.stderr]).toEqual([
        1,
        `Error: --queues-in found no queue: ${q} is itself a queue, not a parent of queues: serve it with -q ${q}\n`,
      ]);
      const empty = path.join(dir, 'empty');
      fs.mkdirSync(empty);
      expect(fspl(['queue-process', '--queues-in', empty, 'true']).stderr).toBe(
        `Error: --queues-in found no queue: ${empty} holds no directory\n`,
      );
      const odd = path.join(dir, 'odd');
      fs.mkdirSync(path.join(odd, 'photos'), { recursive: true });
      Queue.init(path.join(odd, 'outbox'), { appendOnly: true });
      const r = fspl(['queue-process', '--queues-in', odd, 'true']);
      expect([r.code, r.stderr]).toEqual([
        1,
        `Error: --queues-in found no queue: no queue under ${odd}: outbox (no ` +
          `nextseq.lock: an append-only queue, or one still being made), photos (no jobs/)\n`,
      ]);
      // With -q as well, the other queues are served: a warning.
      const both = fspl(['queue-process', '-q', q, '--queues-in', empty, 'true']);
      expect(both.code).toBe(0);
      expect(both.stderr).toContain(`--queues-in found no queue: ${empty} holds no directory\n`);
      // Watching: warned once, and the queue made later is served.
      const child = spawn(
        process.execPath,
        [FSPL_BIN, 'queue-process', '--watch', '--queues-in', empty, 'sh', '--', '-c', `cat > "${dir}/served"`],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      await new Promise((r) => setTimeout(r, 1500));
      const later = Queue.init(path.join(empty, 'later'));
      later.writeBuffer(
        Buffer.concat([
          encodeHeader(makeHeader({ seq: 1n, cmd: { kind: 'Command', params: [], env: [] } })),
          Buffer.from('hello'),
        ]),
      );
      for (let i = 0; i < 100 && !fs.existsSync(path.join(dir, 'served')); i++)
        await new Promise((r) => setTimeout(r, 100));
      child.kill('SIGTERM');
      await new Promise((r) => child.on('close', r));
      expect(fs.readFileSync(path.join(dir, 'served'), 'utf8')).toBe('hello');
      expect(stderr.match(/found no queue/g)).toHaveLength(1);
      expect(stderr).toMatch(/holds no directory; watching for queues to appear/);
    },
  );

  it('--watch --queues-in: serves a queue made later, forgets one removed, and SIGTERM exits 0', async () => {
    const { parent, queues, log } = setup(1, 1);
    const child = spawn(
      process.execPath,
      [FSPL_BIN, 'queue-process', '--watch', '--queues-in', parent, 'sh', '--', '-c', RECORD],
      {
        env: { ...process.env, LOG: log },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const until = async (what: string, cond: () => boolean) => {
      for (const end = Date.now() + 20_000; !cond(); await new Promise((r) => setTimeout(r, 10))) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`waiting for ${what}: ${stderr}`);
      }
    };
    try {
      await until('the first queue', () => logLines(log).includes('end q0 1'));
      const later = Queue.init(path.join(parent, 'later'));
      put(later, 1);
      await until('the queue made later', () => logLines(log).includes('end later 1'));
      // As an operator's rm -rf: the run's look at the queue as it empties puts nothing back (queue-lock.ts vanishing),
      // so a single pass removes it.
      fs.rmSync(queues[0]!.dir, { recursive: true });
      put(later, 2);
      await until('its second job', () => logLines(log).includes('end later 2'));
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', r)));
    expect(code).toBe(0);
    expect(
      stderr.split('\n').filter((l) => l && !/INFO fspl::process: Stopping after the running jobs/.test(l)),
    ).toEqual([]);
  });

  it(
    "--watch --queues-in: README's skips past a failed job, and " +
      'queue-set-next past a missing one, run the queue at once',
    async () => {
      const { parent, queues, log } = setup(2, 3);
      const gap = Queue.init(path.join(parent, 'gap'));
      put(gap, 2); // job 1 never comes
      put(gap, 3);
      const failFirst =
        `${RECORD}; [ "$(basename $FSPL_JOB_QUEUEDIR) $FSPL_SEQ" != "q0 ` +
        `1" ] && [ "$(basename $FSPL_JOB_QUEUEDIR) $FSPL_SEQ" != "q1 1" ]`;
      const child = spawn(
        process.execPath,
        [FSPL_BIN, 'queue-process', '--watch', '--queues-in', parent, 'sh', '--', '-c', failFirst],
        {
          env: { ...process.env, LOG: log },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      const until = async (what: string, cond: () => boolean) => {
        for (const end = Date.now() + 20_000; !cond(); await new Promise((r) => setTimeout(r, 10))) {
          if (Date.now() > end || child.exitCode !== null) throw new Error(`waiting for ${what}: ${stderr}`);
        }
      };
      try {
        await until('job 1 to fail', () => /Queue ".*q0" stopped/.test(stderr) && /Queue ".*q1" stopped/.test(stderr));
        // Nothing arrives from here on: with events, the only look left is the safety look, 30 s away.
        expect(fspl(['queue-set-next', '-q', queues[0]!.dir, '2']).code).toBe(0);
        await until('jobs 2 and 3 of the stopped queue', () => logLines(log).includes('end q0 3'));
        expect(fspl(['queue-process', '-q', queues[1]!.dir, '--on-error', 'delete', '-n', '1', 'true']).code).toBe(0);
        await until('jobs 2 and 3 of the queue whose job 1 the operator ran', () => logLines(log).includes('end q1 3'));
        expect(logLines(log).filter((l) => l.includes('gap'))).toEqual([]);
        expect(fspl(['queue-set-next', '-q', gap.dir, '2']).code).toBe(0);
        await until('jobs 2 and 3 past the gap', () => logLines(log).includes('end gap 3'));
      } finally {
        child.kill('SIGTERM');
      }
      const code = await new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', r)));
      expect(code).toBe(0);
      const started = logLines(log).filter((l) => l.startsWith('start'));
      expect(started.filter((l) => !l.includes('q1'))).toEqual([
        'start q0 1',
        'start q0 2',
        'start q0 3',
        'start gap 2',
        'start gap 3',
      ]);
      expect(started.filter((l) => l.includes('q1'))).toEqual(['start q1 1', 'start q1 2', 'start q1 3']);
      expect(stderr).toMatch(/Queue ".*q0" resumed/);
    },
  );
});

// docs/queues.md, "Many queues": the cron line and the systemd unit it gives.
const section = fs
  .readFileSync(path.join(ROOT, 'docs', 'queues.md'), 'utf8')
  .split('## Many queues')[1]!
  .split('\n## ')[0]!;
const unit = /```ini\n([\s\S]*?)```/.exec(section)![1]!;
const cronLine = /```cron\n[^\n]*\n(\S+ \S+ \S+ \S+ \S+ )([^\n]*)\n```/.exec(section)![2]!;

test("docs/queues.md's cron line over --queues-in runs every queue under cron's environment", () => {
  const { dir, parent, queues, log } = setup(3, 1);
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  fs.symlinkSync(FSPL_BIN, path.join(bin, 'fspl'));
  fs.symlinkSync(process.execPath, path.join(bin, 'node'));
  fs.mkdirSync(path.join(dir, 'home'));
  fs.renameSync(parent, path.join(dir, 'home', 'queues'));
  const handler = path.join(bin, 'handler');
  fs.writeFileSync(handler, `#!/bin/sh\n${RECORD}\n`, { mode: 0o755 });
  const line = cronLine.replaceAll('/usr/local/bin/handler', handler).replace(/^fspl /, `${bin}/fspl `);
  const r = spawnSync('/bin/sh', ['-c', line], {
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: path.join(dir, 'home'), SHELL: '/bin/sh', LOG: log },
    encoding: 'utf8',
  });
  expect(r.status, r.stderr).toBe(0);
  expect(
    logLines(log)
      .filter((l) => l.startsWith('end'))
      .sort(),
  ).toEqual(queues.map((q) => `end ${path.basename(q.dir)} 1`).sort());
});

test("docs/queues.md's unit for --watch --queues-in runs fspl by an absolute path, restarted on failure", () => {
  expect(unit).toMatch(/^ExecStart=\/\S+\/fspl queue-process --watch --queues-in \S+ /m);
  expect(unit).toMatch(/^Restart=on-failure$/m);
  expect(unit).toMatch(/^Environment=PATH=\/usr\/local\/bin:/m);
});

const hasAnalyze = spawnSync('sh', ['-c', 'command -v systemd-analyze']).status === 0;
describeIfPresent(
  'systemd-analyze verify',
  hasAnalyze ? [] : ['systemd-analyze'],
  { what: 'systemd unit check' },
  () => {
    it("docs/queues.md's unit for --watch --queues-in verifies (with this checkout's fspl as its ExecStart)", () => {
      const dir = memTempDir();
      const file = path.join(dir, 'fspl-queues.service');
      fs.writeFileSync(
        file,
        unit.replaceAll('/usr/local/bin/fspl', FSPL_BIN).replaceAll('/usr/local/bin/handler', '/bin/true'),
      );
      const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/fspl-queues\.service:/);
    });
  },
);
