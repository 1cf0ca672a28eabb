/**
 * Stopping queue-process and stdin-process with signals sent as a terminal or a service manager
 * sends them: to fspl's whole process group (fspl is started `detached`, leading a group of its
 * own, as a shell starts a foreground job). A job's command runs in a session of its own
 * (src/sys/exec.ts), so the first SIGINT or SIGTERM lets it finish; a second one, SIGHUP, or
 * --stop-timeout stops it, and it stays in the queue. Tested on the one-queue path (with and
 * without --watch), over many queues (-q twice with --jobs 2: the second job runs through
 * child_process, the first through the addon; --watch --queues-in), through a decoder, and for
 * stdin-process; Ctrl-C typed on a real terminal (script(1)) too.
 *
 * No timing assertions: each step waits for what fspl or the job says it did (a line of the
 * log, a line on fspl's stderr); the deadlines only turn a hang into a failure.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import { Queue } from '../../src/queue/queue.js';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, memTempDir, ROOT } from '../helpers.js';

/**
 * The job: says it started (with its pid, its session's leader), starts a grandchild that would
 * outlive it (its pid said too), waits for the file $GO, says it ended. Its queue is the
 * basename of FSPL_JOB_QUEUEDIR ("-" for stdin-process).
 */
const JOB = [
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell's ${VAR:--}, not a template
  'q=$(basename "${FSPL_JOB_QUEUEDIR:--}")',
  'sleep 300 & echo "grandchild $q $!" >> "$LOG"',
  'echo "start $q $FSPL_SEQ $$" >> "$LOG"',
  'while [ ! -e "$GO" ]; do sleep 0.02; done',
  'cat > /dev/null',
  'echo "end $q $FSPL_SEQ" >> "$LOG"',
].join('\n');

const packet = (seq: number) =>
  encodeHeader(makeHeader({ seq: BigInt(seq), cmd: { kind: 'Command', params: [], env: [] } }));

interface Setup {
  dir: string;
  parent: string;
  queues: Queue[];
  log: string;
  go: string;
}

/** `count` queues of `jobs` jobs each, under one parent. */
function setup(count: number, jobs: number): Setup {
  const dir = memTempDir('fspl-stop-');
  const parent = path.join(dir, 'queues');
  fs.mkdirSync(parent);
  const queues = Array.from({ length: count }, (_, i) => {
    const q = Queue.init(path.join(parent, `q${i}`));
    for (let s = 1; s <= jobs; s++) q.writeBuffer(packet(s));
    return q;
  });
  const log = path.join(dir, 'log');
  fs.writeFileSync(log, '');
  return { dir, parent, queues, log, go: path.join(dir, 'go') };
}

const lines = (log: string) => fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);

async function until(what: string, cond: () => boolean, child?: ChildProcess & { err?: string }): Promise<void> {
  for (const end = Date.now() + 30_000; !cond(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > end) throw new Error(`waiting for ${what}${child ? `; fspl said: ${child.err}` : ''}`);
    if (child && (child.exitCode ?? child.signalCode) !== null && !cond())
      throw new Error(`fspl ended (${child.exitCode ?? child.signalCode}) before ${what}: ${child.err}`);
  }
}

type Fspl = ChildProcess & { err: string };

/**
 * `file ARGS` with $LOG and $GO set (and `env`), stdin `stdin`; what it says on `said` (stderr
 * or, for script(1), stdout) kept in `err`. `detached`: leading a process group of its own.
 */
function launch(
  s: Setup,
  file: string,
  args: string[],
  o: {
    stdin?: number | 'pipe' | 'ignore';
    said?: 'stdout' | 'stderr';
    detached?: boolean;
    env?: Record<string, string>;
  } = {},
): Fspl {
  const said = o.said ?? 'stderr';
  const stdio =
    said === 'stderr'
      ? ([o.stdin ?? 'ignore', 'ignore', 'pipe'] as const)
      : ([o.stdin ?? 'ignore', 'pipe', 'inherit'] as const);
  const child = spawn(file, args, {
    detached: o.detached ?? false,
    stdio: [...stdio],
    env: { ...process.env, LOG: s.log, GO: s.go, SHELL: '/bin/sh', ...o.env },
  }) as Fspl;
  child.err = '';
  child[said]!.on('data', (d) => (child.err += d));
  return child;
}

/** fspl ARGS with JOB as its command, leading a process group of its own, as a terminal's foreground job. */
function start(s: Setup, args: string[], stdin: number | 'ignore' = 'ignore', env: Record<string, string> = {}): Fspl {
  return launch(s, process.execPath, [FSPL_BIN, ...args, 'sh', '--', '-c', JOB], { stdin, detached: true, env });
}

/**
 * fspl ARGS under a pseudo-terminal (script(1)), whose input the test types; what it shows kept.
 * script runs `$SHELL -c`: `exec`, so that no shell waits between (one that took the Ctrl-C too
 * may end by it once fspl has exited 0, as dash does).
 */
function onTerminal(s: Setup, args: string[]): Fspl {
  const cmd = `exec ${[process.execPath, FSPL_BIN, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ')}`;
  return launch(s, 'script', ['-qfec', cmd, '/dev/null'], { stdin: 'pipe', said: 'stdout' });
}

/** Signal fspl's whole process group, as Ctrl-C on a terminal or a stop of systemd's. */
function signalGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  process.kill(-child.pid!, sig);
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );
}

/** Whether a process is still running (a zombie no reaper took counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const starts = (log: string) => lines(log).filter((l) => l.startsWith('start'));
const ends = (log: string) => lines(log).filter((l) => l.startsWith('end'));
const grandchildren = (log: string) =>
  lines(log).flatMap((l) => (l.startsWith('grandchild') ? [Number(l.split(' ')[2])] : []));
const jobFiles = (q: Queue) => fs.readdirSync(q.jobsDir).length;

/** Once fspl has taken the first signal: its line on stderr. */
const stopping = (child: Fspl) =>
  until('the stop to be said', () => /INFO fspl::process: Stopping after /.test(child.err), child);

/**
 * Once `ready` holds (by default: `jobs` jobs have started), do `act`; then fspl's exit status.
 * fspl is killed if anything fails on the way.
 */
async function drive(
  child: Fspl,
  s: Setup,
  act: () => unknown,
  ready: number | (() => boolean) = 1,
): Promise<number | null> {
  try {
    await until('the jobs to start', typeof ready === 'number' ? () => starts(s.log).length === ready : ready, child);
    await act();
    return await exited(child);
  } finally {
    child.kill('SIGKILL');
  }
}

/** The first signal to fspl's process group, then (once fspl has said it stops) the jobs may finish. */
const stopThenFinish =
  (child: Fspl, s: Setup, sig: NodeJS.Signals = 'SIGINT') =>
  async () => {
    signalGroup(child, sig);
    await stopping(child);
    fs.writeFileSync(s.go, '');
  };

/** Two signals to fspl's process group, the second once fspl has said it stops. */
const twoSignals = (child: Fspl, first: NodeJS.Signals, second: NodeJS.Signals) => async () => {
  signalGroup(child, first);
  await stopping(child);
  signalGroup(child, second);
};

/** The paths a queue-process run can take: one queue, or many, with and without --watch. */
const PATHS = [
  { name: 'one queue', queues: 1, args: (s: Setup) => ['queue-process', '-q', s.queues[0]!.dir] },
  { name: 'one queue, --watch', queues: 1, args: (s: Setup) => ['queue-process', '-q', s.queues[0]!.dir, '--watch'] },
  {
    name: 'two queues (-q twice, --jobs 2)',
    queues: 2,
    args: (s: Setup) => ['queue-process', '-q', s.queues[0]!.dir, '-q', s.queues[1]!.dir, '--jobs', '2'],
  },
  {
    name: '--watch --queues-in, --jobs 2',
    queues: 2,
    args: (s: Setup) => ['queue-process', '--watch', '--queues-in', s.parent, '--jobs', '2'],
  },
];

describe('queue-process: SIGINT to the whole process group', () => {
  for (const p of PATHS) {
    it(`${p.name}: the first lets the running jobs finish; they are recorded, no other starts, exit 0`, async () => {
      const s = setup(p.queues, 3);
      const child = start(s, p.args(s));
      expect(await drive(child, s, stopThenFinish(child, s), p.queues), child.err).toBe(0);
      expect(ends(s.log).sort()).toEqual(s.queues.map((q) => `end ${path.basename(q.dir)} 1`));
      expect(starts(s.log)).toHaveLength(p.queues);
      for (const q of s.queues) {
        expect(q.getNext()).toBe(2n);
        expect(jobFiles(q)).toBe(2);
      }
      expect(child.err).not.toMatch(/killed|ERROR|Error/);
    });
  }

  for (const p of [PATHS[0]!, PATHS[3]!]) {
    it(
      `${p.name}: a second signal stops the running jobs and their ` +
        `children; they stay in their queues (even under --on-error delete)`,
      async () => {
        const s = setup(p.queues, 2);
        const child = start(s, [...p.args(s), '--on-error', 'delete']);
        expect(await drive(child, s, twoSignals(child, 'SIGINT', 'SIGTERM'), p.queues), child.err).toBe(0);
        expect(ends(s.log)).toEqual([]);
        expect(child.err).toMatch(/INFO fspl::process: SIGTERM again: stopping the (current job|running jobs) now/);
        expect(child.err).toMatch(
          /INFO fspl::process: Job 1 interrupted \(command was stopped before it finished\): it stays in the queue/,
        );
        for (const q of s.queues) {
          expect(q.getNext()).toBe(1n);
          expect(jobFiles(q)).toBe(2);
        }
        // The whole group went, the job's own children too.
        await until('the grandchildren to go', () => grandchildren(s.log).every((pid) => !alive(pid)));
      },
    );
  }

  it('--stop-timeout: a job still running that long after the first signal is stopped, and stays', async () => {
    const s = setup(1, 1);
    const child = start(s, ['queue-process', '-q', s.queues[0]!.dir, '--stop-timeout', '0.2']);
    expect(await drive(child, s, () => signalGroup(child, 'SIGTERM')), child.err).toBe(0);
    expect(child.err).toMatch(/Stopping after the current job \(or in 0.2 s\)/);
    expect(child.err).toMatch(/The running jobs had 0.2 s to finish: stopping them now/);
    expect([ends(s.log), s.queues[0]!.getNext(), jobFiles(s.queues[0]!)]).toEqual([[], 1n, 1]);
  });

  it('SIGHUP (the terminal hung up) stops the running job at once; it stays', async () => {
    const s = setup(1, 1);
    const child = start(s, ['queue-process', '-q', s.queues[0]!.dir, '--watch']);
    expect(await drive(child, s, () => signalGroup(child, 'SIGHUP')), child.err).toBe(0);
    expect(child.err).toMatch(/INFO fspl::process: SIGHUP: stopping the current job now/);
    expect([ends(s.log), s.queues[0]!.getNext(), jobFiles(s.queues[0]!)]).toEqual([[], 1n, 1]);
  });

  it(
    "systemd's default KillMode=control-group (SIGTERM to fspl and to the " +
      'job): the job killed with the run stays, even under --on-error delete',
    async () => {
      const s = setup(1, 1);
      const child = start(s, ['queue-process', '-q', s.queues[0]!.dir, '--watch', '--on-error', 'delete']);
      const asSystemdDoes = () => {
        signalGroup(child, 'SIGTERM');
        process.kill(-Number(starts(s.log)[0]!.split(' ')[3]), 'SIGTERM'); // the job's group
      };
      expect(await drive(child, s, asSystemdDoes), child.err).toBe(0);
      expect(child.err).toMatch(
        /Job 1 interrupted \(command was killed by signal SIGTERM as fspl was stopped\): it stays in the queue/,
      );
      expect([ends(s.log), s.queues[0]!.getNext(), jobFiles(s.queues[0]!)]).toEqual([[], 1n, 1]);
    },
  );

  it('through a decoder: the decoder of the running job is not signalled either', async () => {
    const s = setup(1, 0);
    const q = s.queues[0]!;
    for (const seq of [1, 2])
      fs.writeFileSync(path.join(q.jobsDir, `fspl-00000000-0000-4000-8000-00000000000${seq}.fspl`), packet(seq));
    // The decoder gives the packet, then holds its output open until $GO: the job reads to its end.
    const decoder = 'cat; while [ ! -e "$GO" ]; do sleep 0.02; done';
    const child = start(s, ['queue-process', '-q', q.dir, '-d', decoder]);
    expect(await drive(child, s, stopThenFinish(child, s)), child.err).toBe(0);
    expect([ends(s.log), q.getNext(), jobFiles(q)]).toEqual([['end q0 1'], 2n, 1]);
  });

  it('without the addon (FSPL_NO_NATIVE=1): the same, through child_process', async () => {
    const s = setup(1, 2);
    const child = start(s, ['queue-process', '-q', s.queues[0]!.dir], 'ignore', { FSPL_NO_NATIVE: '1' });
    expect(await drive(child, s, stopThenFinish(child, s)), child.err).toBe(0);
    expect([ends(s.log), s.queues[0]!.getNext(), jobFiles(s.queues[0]!)]).toEqual([['end q0 1'], 2n, 1]);
  });
});

describe('stdin-process: signals to the whole process group', () => {
  /** stdin-process with the packet of job 7 on its stdin (a file). */
  function startStdin(s: Setup, extra: string[] = []): Fspl {
    const file = path.join(s.dir, 'packet');
    fs.writeFileSync(file, Buffer.concat([packet(7), Buffer.from('payload')]));
    const fd = fs.openSync(file, 'r');
    try {
      return start(s, ['stdin-process', ...extra], fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  it("the first SIGINT lets the job finish, and its status is fspl's", async () => {
    const s = setup(0, 0);
    const child = startStdin(s);
    expect(await drive(child, s, stopThenFinish(child, s)), child.err).toBe(0);
    expect(ends(s.log)).toEqual(['end - 7']);
  });

  it('a second signal stops it: exit 1, the job said to be interrupted', async () => {
    const s = setup(0, 0);
    const child = startStdin(s);
    expect(await drive(child, s, twoSignals(child, 'SIGTERM', 'SIGINT')), child.err).toBe(1);
    expect(ends(s.log)).toEqual([]);
    expect(child.err).toMatch(/^Error: Job 7 interrupted \(command was stopped before it finished\)$/m);
    await until('the grandchild to go', () => grandchildren(s.log).every((pid) => !alive(pid)));
  });

  it('--stop-timeout stops it that long after the first signal', async () => {
    const s = setup(0, 0);
    const child = startStdin(s, ['--stop-timeout', '0.1']);
    expect(await drive(child, s, () => signalGroup(child, 'SIGINT')), child.err).toBe(1);
    expect(child.err).toMatch(/^Error: Job 7 interrupted/m);
  });

  it('a signal while it waits for the header ends fspl at once, as it always did (nothing runs yet)', async () => {
    // stdin a socket that gives nothing: fspl waits for the header, blocked in a read.
    const child = spawn(process.execPath, [FSPL_BIN, 'stdin-process', 'true'], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    try {
      await until('fspl to wait for its stdin', () => /read|recv|pipe_wait/.test(waitsIn(child.pid!)));
      signalGroup(child, 'SIGINT');
      expect(await new Promise((resolve) => child.once('exit', (_code, sig) => resolve(sig)))).toBe('SIGINT');
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/** What a process's main thread waits in, as the kernel says (e.g. unix_stream_read_generic; 0 when it runs). */
function waitsIn(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/wchan`, 'utf8');
  } catch {
    return '';
  }
}

const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;
describeIfPresent(
  'Ctrl-C typed on a terminal (script(1))',
  hasScript ? [] : ['script'],
  { what: 'terminal test' },
  () => {
    it('queue-process --watch: the job finishes and is recorded, exit 0', async () => {
      const s = setup(1, 2);
      const child = onTerminal(s, ['queue-process', '-q', s.queues[0]!.dir, '--watch', 'sh', '--', '-c', JOB]);
      const ctrlC = async () => {
        child.stdin!.write('\x03');
        await stopping(child);
        fs.writeFileSync(s.go, '');
      };
      expect(await drive(child, s, ctrlC), child.err).toBe(0);
      expect([ends(s.log), s.queues[0]!.getNext(), jobFiles(s.queues[0]!)]).toEqual([['end q0 1'], 2n, 1]);
    });

    it('a job reads the terminal (--ignore-payload) without being stopped for it, but has no /dev/tty', async () => {
      const s = setup(1, 1);
      const job =
        'echo ready >> "$LOG"; read line; echo "got $line" >> "$LOG"; if (: > /dev/tty) ' +
        '2>/dev/null; then echo tty >> "$LOG"; else echo "no tty" >> "$LOG"; fi';
      const child = onTerminal(s, ['queue-process', '-q', s.queues[0]!.dir, '--ignore-payload', 'sh', '--', '-c', job]);
      expect(
        await drive(
          child,
          s,
          () => child.stdin!.write('hello\r'),
          () => lines(s.log).includes('ready'),
        ),
        child.err,
      ).toBe(0);
      expect(lines(s.log)).toEqual(['ready', 'got hello', 'no tty']);
    });
  },
);

// docs/queues.md's systemd units, for one queue (a timer's oneshot) and for many (--watch --queues-in).
const page = fs.readFileSync(path.join(ROOT, 'docs', 'queues.md'), 'utf8');
const units = [...page.matchAll(/```ini\n([\s\S]*?)```/g)]
  .map((m) => m[1]!.split(/\n(?=# ~\/)/)[0]!)
  .filter((u) => /^ExecStart=.* queue-process /m.test(u));

describe("docs/queues.md's systemd units stop cleanly", () => {
  it('are two (one queue, many queues), each with KillMode=mixed and a --stop-timeout below TimeoutStopSec', () => {
    expect(units.map((u) => /^# ~\/\.config\/systemd\/user\/(\S+)/.exec(u)?.[1])).toEqual([
      'fspl-queue.service',
      'fspl-queues.service',
    ]);
    for (const u of units) {
      expect(u).toMatch(/^KillMode=mixed$/m);
      const stopTimeout = Number(/ --stop-timeout (\d+) /.exec(u)?.[1]);
      const timeoutStopSec = Number(/^TimeoutStopSec=(\d+)$/m.exec(u)?.[1]);
      expect(stopTimeout).toBeGreaterThan(0);
      expect(timeoutStopSec).toBeGreaterThan(stopTimeout);
    }
  });

  for (const unit of units) {
    const name = /^# ~\/\.config\/systemd\/user\/(\S+)/m.exec(unit)![1]!;
    it(
      `${name}: a stop as KillMode=mixed makes it (SIGTERM to ` +
        `fspl alone) lets the running job finish, then exits 0`,
      async () => {
        const s = setup(1, 2);
        const home = path.join(s.dir, 'home');
        fs.mkdirSync(home);
        fs.renameSync(s.parent, path.join(home, 'queues'));
        fs.symlinkSync(path.join(home, 'queues', 'q0'), path.join(home, 'queue'));
        const handler = path.join(s.dir, 'handler');
        fs.writeFileSync(handler, `#!/bin/sh\n${JOB}\n`, { mode: 0o755 });
        const argv = /^ExecStart=(.*)$/m
          .exec(unit)![1]!
          .replaceAll('%h', home)
          .replaceAll('/usr/local/bin/handler', handler)
          .split(' ');
        expect(argv[0]).toBe('/usr/local/bin/fspl');
        const child = launch(s, process.execPath, [FSPL_BIN, ...argv.slice(1)]);
        const asKillModeMixed = async () => {
          child.kill('SIGTERM'); // fspl alone
          await stopping(child);
          fs.writeFileSync(s.go, '');
        };
        expect(await drive(child, s, asKillModeMixed), child.err).toBe(0);
        const q = Queue.open(path.join(home, 'queues', 'q0'));
        expect([ends(s.log).map((l) => l.split(' ')[2]), q.getNext(), jobFiles(q)]).toEqual([['1'], 2n, 1]);
      },
    );
  }

  const hasAnalyze = spawnSync('sh', ['-c', 'command -v systemd-analyze']).status === 0;
  describeIfPresent(
    'systemd-analyze verify',
    hasAnalyze ? [] : ['systemd-analyze'],
    { what: 'systemd unit check' },
    () => {
      for (const unit of units) {
        const name = /^# ~\/\.config\/systemd\/user\/(\S+)/m.exec(unit)![1]!;
        it(`${name} verifies (with this checkout's fspl as its ExecStart)`, () => {
          const file = path.join(memTempDir(), name);
          fs.writeFileSync(
            file,
            unit.replaceAll('/usr/local/bin/fspl', FSPL_BIN).replaceAll('/usr/local/bin/handler', '/bin/true'),
          );
          const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
          expect(r.status, r.stderr).toBe(0);
          expect(r.stderr).not.toMatch(new RegExp(`${name.replace('.', '\\.')}:`));
        });
      }
    },
  );
});
