/**
 * Starting child processes: every one fspl starts goes through here. A queue job's command
 * (runCommand) and a net firing's command (runDetached), each leading a process group of its
 * own, killed as a group; a decoder or an ssh connection (spawnTalking).
 *
 * Why a job's command is not in fspl's process group: a terminal's Ctrl-C, or a supervisor's
 * signal, reaches the whole group, and fspl answers SIGINT and SIGTERM by letting the running job
 * finish (process/run-stop.ts, cli/runtime/stop-signals.ts), which a command that got the same
 * signal could not do. With a controlling terminal the command leads a session too: a background
 * group that reads its terminal is stopped (SIGTTIN), and fspl would wait for ever; in a session
 * it keeps the descriptors it is given, but the terminal's signals reach only fspl. Not a session
 * always: setsid(2) also gives each job a scheduler autogroup, a measurable cost.
 *
 * No shell, and not execa (its spawns cost twice a bare one); the payload goes as a descriptor, so the
 * kernel moves the bytes. The addon starts what it can (native.ts, native/child_start.c), else child_process.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { ExecError, ExecTooLargeError } from '../base/errors.js';
import { checkSeconds, setLongTimeout } from '../base/timer.js';
import { killGroup, Stopper } from './command-stop.js';
import { execSizeProblem, TOO_LARGE } from './exec-size.js';
import type { DetachedOptions, DetachedResult, RunOptions, RunResult } from './exec-types.js';
import {
  isPackable,
  type NativeExit,
  nativeSpawn,
  nativeSpawnDetached,
  type SpawnIo,
  signalNumber,
} from './native-spawn.js';

export type { DetachedOptions, DetachedResult, RunOptions, RunResult, StdinSource } from './exec-types.js';

export function describeResult(r: RunResult): string {
  if (r.timedOut) return 'timed out and was killed';
  if (r.stopped) return 'was stopped before it finished';
  if (r.signal) return `was killed by signal ${r.signal}`;
  return `exited with status ${r.code}`;
}

/**
 * node:child_process, taken when first needed: with the addon it starts no job, and importing it
 * loads net, dgram and the streams (docs/benchmarks-notes.md, "The first job's modules").
 */
const childProcess = () => process.getBuiltinModule('node:child_process');

/** Children started through the addon and not yet reaped. */
let nativeRunning = 0;

let jobGroup: 'group' | 'session' | undefined;

/** What a job's command leads (the top of this file says why): a session on a terminal, else a process group. */
function jobGroupKind(): 'group' | 'session' {
  return (jobGroup ??= hasControllingTerminal() ? 'session' : 'group');
}

/** Whether this process has a controlling terminal: tty_nr in /proc/self/stat (without /proc: assume so). */
function hasControllingTerminal(): boolean {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'latin1');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[4]) !== 0;
  } catch {
    return true;
  }
}

/** Why a command could not start, in a few words. */
export function startProblem(code: string | undefined, message: string): string {
  if (code === 'E2BIG') return TOO_LARGE;
  return code === 'ENOENT' ? 'No such file or directory' : code === 'EACCES' ? 'Permission denied' : message;
}

/**
 * A command that could not start: ExecTooLargeError for arguments or an environment too large (E2BIG), else ExecError.
 */
function startFailure(command: string, code: string | undefined, message: string, cause: unknown): ExecError {
  if (code === 'E2BIG') return new ExecTooLargeError(command, TOO_LARGE, { cause });
  return new ExecError(`Failed to run ${JSON.stringify(command)}: ${startProblem(code, message)}`, { cause });
}

/**
 * The native path: the addon's start, then a wait through a pidfd the event loop polls (on a thread of
 * the pool where the kernel has no pidfd_open). Undefined when the addon is missing or the job
 * needs child_process (see nativeSpawn).
 */
function runNative(opts: RunOptions): Promise<RunResult> | undefined {
  const { adopt } = opts;
  // Without pidfd_open the addon waits for its child on a thread of libuv's pool (4 threads,
  // shared with fs and crypto). The CLI runs one job at a time; a library user running several
  // queues at once gets child_process for the others, so that long jobs never starve the pool.
  // (An adopted child is running already, whatever else runs.)
  const io = adopt ? undefined : spawnIo(opts);
  if (!adopt && (!io || nativeRunning > 0)) return undefined;
  let stopper: Stopper | undefined;
  let settle!: (r: RunResult) => void;
  const result = new Promise<RunResult>((resolve) => (settle = resolve));
  nativeRunning++;
  const onExit = ({ code, signal, chained }: NativeExit) => {
    nativeRunning--;
    opts.link?.exited(chained);
    // onExit comes through the event loop: stopper is set
    settle({ ...stopper!.result(code), code, signal, stdinClosedEarly: false });
  };
  // In a process group of its own (the top of this file says why).
  const started = io ? nativeSpawn(io, onExit, jobGroupKind()) : adopt && { pid: adopt.pid };
  adopt?.exited.then(onExit);
  if (started === undefined) {
    nativeRunning--;
    return undefined;
  }
  if ('errno' in started) {
    nativeRunning--;
    const err = Object.assign(new Error(`spawn ${opts.command} ${started.code}`), {
      errno: -started.errno,
      code: started.code,
      syscall: `spawn ${opts.command}`,
      path: opts.command,
    });
    return Promise.reject(startFailure(opts.command, started.code, err.message, err));
  }
  const pid = started.pid;
  // The child is reaped on this thread just before onExit runs: until then its group is ours.
  stopper = new Stopper(opts, () => killGroup(pid));
  opts.link?.started(pid, jobGroupKind());
  return result;
}

/**
 * What the addon starts for a command run through runCommand: the command, its arguments and
 * environment, and its descriptors (stdout and stderr: ours, or the output's); undefined for a
 * stdin that is a stream (child_process pipes it). A chained start (exec-chain.ts) is made of the same.
 */
export function spawnIo(opts: RunOptions): SpawnIo | undefined {
  const { stdin } = opts;
  if (typeof stdin === 'object') return undefined;
  const out = opts.output === 'inherit' ? undefined : opts.output;
  const inFd = stdin === 'inherit' ? 0 : stdin === 'ignore' ? -1 : stdin;
  return { command: opts.command, args: opts.args, env: opts.env, stdin: inFd, stdout: out ?? 1, stderr: out ?? 2 };
}

/**
 * Run a command to completion. Rejects with ExecError if it cannot be started at all, with
 * ExecTooLargeError when its arguments or environment are more than execve(2) takes (checked
 * first, exec-size.ts; E2BIG from the start, should the check have missed it, says the same).
 */
export function runCommand(opts: RunOptions): Promise<RunResult> {
  checkSeconds(opts.timeout, 'runCommand: timeout');
  // An adopted child started: its size was checked before the chain was armed (chainedStart).
  const tooLarge = opts.adopt ? undefined : execSizeProblem(opts.command, opts.args, opts.env);
  if (tooLarge) return Promise.reject(new ExecTooLargeError(opts.command, tooLarge));
  return runNative(opts) ?? runChildProcess(opts);
}

function runChildProcess(opts: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const stdin = typeof opts.stdin === 'object' ? 'pipe' : opts.stdin;
    const out = opts.output;
    let child: ChildProcess;
    try {
      // detached: a session (and process group) of its own (the top of this file says why).
      child = childProcess().spawn(opts.command, opts.args, {
        stdio: [stdin, out, out],
        env: isPackable(opts.env) ? opts.env.record() : opts.env,
        detached: true,
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      reject(
        code === 'E2BIG'
          ? startFailure(opts.command, code, '', err)
          : new ExecError(`Failed to run ${JSON.stringify(opts.command)}: ${(err as Error).message}`, { cause: err }),
      );
      return;
    }
    let stdinClosedEarly = false;
    // Node reaps the child just before it sets exitCode or signalCode (and emits 'exit').
    const running = () => child.exitCode === null && child.signalCode === null;
    const stopper = child.pid === undefined ? undefined : new Stopper(opts, () => running() && killGroup(child.pid!));
    if (typeof opts.stdin === 'object' && child.stdin) {
      const src = opts.stdin;
      const sink = child.stdin;
      sink.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EPIPE' || err.code === 'ECONNRESET') {
          stdinClosedEarly = true;
          src.unpipe(sink);
          src.destroy();
        }
      });
      src.pipe(sink);
    }
    child.once('error', (err: NodeJS.ErrnoException) => {
      stopper?.result(null); // disarms it
      reject(startFailure(opts.command, err.code, err.message, err));
    });
    child.once('close', (code, signal) => {
      if (stopper) resolve({ ...stopper.result(code), code, signal, stdinClosedEarly });
    });
  });
}

/** A detached child that could not start: `why` in a few words (startProblem). */
export class StartError extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}

/**
 * Run a command in a process group of its own to its exit. A timeout or the abort signal kills
 * the group: SIGTERM, then SIGKILL after killGraceMs; once the leader exits, whatever it left in
 * its group is killed too. Rejects with StartError when it can't start (as when its arguments or
 * environment are more than execve(2) takes: exec-size.ts). The descriptors in `o`
 * must stay open until it settles (the start may happen after this returns, on the addon's thread;
 * a kill asked for before the pid is known is sent once it is).
 */
export function runDetached(o: DetachedOptions): Promise<DetachedResult> {
  const tooLarge = execSizeProblem(o.command, o.args, o.env);
  if (tooLarge) return Promise.reject(new StartError(tooLarge));
  return new Promise((resolve, reject) => {
    let timedOut = false;
    let abandoned = false;
    let pid: number | undefined;
    /** The last kill asked for before the pid was known: sent once it is. */
    let pending: NodeJS.Signals | undefined;
    const killGroup = (sig: NodeJS.Signals) => {
      if (pid === undefined) {
        pending = sig;
        return;
      }
      try {
        // A leader started by the addon is reaped only on this thread, just before its exit is
        // reported: until then its pid, and so the group's id, is still ours.
        process.kill(-pid, sig);
      } catch {
        // gone already
      }
    };
    let hardKill: NodeJS.Timeout | undefined;
    const stop = (why: 'timeout' | 'abort') => {
      if (why === 'timeout') timedOut = true;
      else abandoned = true;
      killGroup('SIGTERM');
      hardKill = setTimeout(() => killGroup('SIGKILL'), o.killGraceMs);
    };
    const cancelTimer = o.timeout !== undefined ? setLongTimeout(() => stop('timeout'), o.timeout * 1000) : undefined;
    const onAbort = () => stop('abort');
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      cancelTimer?.();
      if (hardKill) clearTimeout(hardKill);
      o.signal?.removeEventListener('abort', onAbort);
    };
    startDetached(o, {
      started(p) {
        pid = p;
        if (pending) killGroup(pending);
      },
      failed(err) {
        done();
        reject(new StartError(startProblem(err.code, err.message)));
      },
      exited({ code, signal }) {
        done();
        // Whatever the command left running in its group goes with it.
        if (timedOut || abandoned) killGroup('SIGKILL');
        const status = signal ? 128 + (signalNumber(signal) ?? 0) : code;
        resolve({ code, signal, status, timedOut, abandoned });
      },
    });
  });
}

/** What becomes of a detached start: its pid, then its exit; or it could not start. */
interface DetachedEvents {
  started(pid: number): void;
  failed(err: NodeJS.ErrnoException): void;
  exited(exit: { code: number | null; signal: NodeJS.Signals | null }): void;
}

/** Start the group's leader: through the addon (on its spawner thread) where it can, else child_process. */
function startDetached(o: DetachedOptions, on: DetachedEvents): void {
  const viaChildProcess = () => startChildProcess(o, on);
  if (o.runAs) {
    viaChildProcess();
    return;
  }
  const taken = nativeSpawnDetached(
    {
      command: o.command,
      args: o.args,
      env: o.env,
      stdin: o.stdin === 'ignore' ? -1 : o.stdin,
      stdout: o.stdout,
      stderr: o.stderr,
    },
    o.cwd,
    (r) => {
      if (r === undefined) viaChildProcess();
      else if ('pid' in r) on.started(r.pid);
      else
        on.failed(
          Object.assign(new Error(`spawn ${o.command} ${r.code}`), { code: r.code, errno: -r.errno, syscall: 'spawn' }),
        );
    },
    on.exited,
  );
  if (!taken) viaChildProcess();
}

function startChildProcess(o: DetachedOptions, on: DetachedEvents): void {
  const env = isPackable(o.env) ? o.env.record() : o.env;
  let child: ChildProcess;
  try {
    child = childProcess().spawn(o.command, o.args, {
      cwd: o.cwd,
      env,
      stdio: [o.stdin, o.stdout, o.stderr],
      detached: true,
      uid: o.runAs?.uid,
      gid: o.runAs?.gid,
    });
  } catch (err) {
    on.failed(err as NodeJS.ErrnoException); // thrown, not emitted: E2BIG, a NUL in a string
    return;
  }
  child.on('error', on.failed);
  child.on('exit', (code, signal) => on.exited({ code, signal }));
  if (child.pid !== undefined) on.started(child.pid);
}

/** Where a talking child's stdin, stdout and stderr go: a descriptor of ours, a pipe to us, ours, or nowhere. */
export type ChildStdio = [number | 'pipe' | 'ignore', 'pipe' | 'ignore', 'pipe' | 'inherit' | 'ignore'];

/**
 * A child we talk to through its stdio as it runs, with a kill policy of the caller's: a decoder, an
 * ssh connection, a short tool, a signing command. With `newSession` it leads a session of its own,
 * as a job's command does (a job's decoder). `env`: its environment, when not ours.
 */
export function spawnTalking(
  command: string,
  args: readonly string[],
  stdio: ChildStdio,
  signal?: AbortSignal,
  newSession = false,
  env?: NodeJS.ProcessEnv,
): ChildProcess {
  return childProcess().spawn(command, args, { stdio, signal, detached: newSession, ...(env ? { env } : {}) });
}

/** The output of a short lookup command (getent), or undefined when it fails or cannot start. */
export function lookupSync(command: string, args: readonly string[]): string | undefined {
  try {
    return childProcess().execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return undefined;
  }
}
