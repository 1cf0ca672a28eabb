/**
 * Starting children through the addon (native.ts loads it): a job's command (nativeSpawn), a net
 * firing's (nativeSpawnDetached), and a queue's next job chained to the one before it
 * (nativeChain). sys/exec.ts and sys/exec-chain.ts are their only callers: fspl has one spawner.
 */
import { type Binding, type EncodedOp, type ExitArgs, loadedNative, loadNative, type SpawnHead } from './native.js';

export interface NativeExit {
  /** The exit status, or null when the child was killed by a signal. */
  code: number | null;
  /** The signal's name (as child_process gives it), or null. */
  signal: NodeJS.Signals | null;
  /** A chain armed on the child fired at its exit (nativeChain): what the addon did. */
  chained?: ChainFired;
}

/** What the addon did at the exit of a chained child (nativeChain). */
export interface ChainFired {
  /** The record's results, as the addon's fsBatchSync returns them. */
  results: Int32Array;
  /** The next child, started and waited for; undefined when nothing was started (a failed record or start). */
  pid: number | undefined;
}

/** What nativeSpawn did: started the child, failed with an errno, or left the job to child_process. */
export type NativeSpawnResult = { pid: number } | { errno: number; code: string } | undefined;

let signalNames: Map<number, NodeJS.Signals> | undefined;

/** node:os's constants, loaded when a name is first wanted: this module is part of every command's start. */
function osConstants(): typeof import('node:os').constants {
  return process.getBuiltinModule('node:os').constants;
}

/** A signal number's name, as child_process reports it (SIGABRT rather than SIGIOT, and so on). */
export function signalName(n: number): NodeJS.Signals | null {
  if (!signalNames) {
    signalNames = new Map();
    // os.constants.signals lists the canonical name first (SIGABRT before SIGIOT, SIGIO before
    // SIGPOLL), as Node's own signo_string() does.
    for (const [name, num] of Object.entries(osConstants().signals))
      if (!signalNames.has(num)) signalNames.set(num, name as NodeJS.Signals);
  }
  return signalNames.get(n) ?? null;
}

/** A signal name's number (os.constants.signals), undefined for a name it does not know. */
export function signalNumber(name: NodeJS.Signals): number | undefined {
  return (osConstants().signals as Record<string, number>)[name];
}

const hasNul = (s: string) => s.includes('\0');

/**
 * What a child is started with: `command`, looked up in the PATH of `env` (as child_process does),
 * its arguments, exactly the environment `env`, and the descriptors that become its stdin (-1:
 * /dev/null), stdout and stderr.
 */
export interface SpawnIo {
  command: string;
  args: readonly string[];
  env: SpawnEnv;
  stdin: number;
  stdout: number;
  stderr: number;
}

/**
 * Start `io` (SpawnIo), every signal at its default and an empty mask. `group` 'session': a session
 * of its own (child_process's `detached: true`); 'group': a process group in our session (an older
 * addon gives a session). Returns undefined (nothing started) when child_process must do it: no
 * addon, a NUL in a string, ENOEXEC (retried through /bin/sh as execvp(3) does), or ENOSYS.
 */
export function nativeSpawn(
  io: SpawnIo,
  onExit: (exit: NativeExit) => void,
  group: 'ours' | 'group' | 'session' = 'ours',
): NativeSpawnResult {
  const b = loadNative();
  // reap() came with spawn's flags: an addon without it would ignore them.
  const head = b && (group === 'ours' || b.reap) && packHead(io);
  if (!b || !head) return undefined;
  const onExited = exitHandler(onExit);
  const flags = groupFlags(b, group);
  const r = flags ? b.spawn(...head, onExited, null, flags) : b.spawn(...head, onExited);
  const res = spawnResult(r);
  return res && 'code' in res && res.code === 'ENOSYS' ? undefined : res;
}

/** The addon's flags for a child in `group`. */
function groupFlags(b: Binding, group: 'ours' | 'group' | 'session'): number {
  if (group === 'ours') return 0;
  return group === 'group' && (b.spawnFlags ?? 0) & SPAWN_SETPGID ? SPAWN_SETPGID : SPAWN_SETSID;
}

/** The addon's exit callback for onExit: the exit, and what a chain did if one fired. */
function exitHandler(onExit: (exit: NativeExit) => void): (...exit: ExitArgs) => void {
  return (code, sig, results, next) => {
    const exit = exitOf(code, sig);
    if (results) exit.chained = { results, pid: next !== undefined && next > 0 ? next : undefined };
    onExit(exit);
  };
}

/** A job's file, by name, and the inode of the file it was opened from (its descriptor's). */
export interface JobFileAt {
  path: string;
  ino: number;
}

/**
 * Arm `pid`, a running child of nativeSpawn's: at its exit with status 0, the addon runs `record`
 * (as runBatchSync would) and, if all of it succeeded and `file.path` still holds `file.ino`,
 * starts `io` in `group` as nativeSpawn does and waits for it; the first child's exit then says so
 * (NativeExit.chained), and `onExit` is the new child's. False (nothing armed) without an addon
 * that chains, with a NUL in a string, or when `pid` has exited or is chained already. An errno or
 * ENOEXEC at that start starts nothing: the caller starts the job as usual, and its start says
 * what is wrong.
 */
export function nativeChain(
  pid: number,
  record: EncodedOp[],
  io: SpawnIo,
  group: 'group' | 'session',
  file: JobFileAt,
  onExit: (exit: NativeExit) => void,
): boolean {
  const b = loadNative();
  const head = b?.chain && b.reap && !hasNul(file.path) && packHead(io);
  if (!b?.chain || !head) return false;
  return b.chain(pid, record, ...head, groupFlags(b, group), file.path, file.ino, exitHandler(onExit));
}

/** Take back nativeChain's arming of `pid`; false when there was none (or it has fired). */
export function nativeUnchain(pid: number): boolean {
  return loadNative()?.unchain?.(pid) ?? false;
}

/** What the addon's spawns take first for `io`, argv and the environment packed (NUL-separated); undefined if a string holds a NUL. */
function packHead(io: SpawnIo): SpawnHead | undefined {
  const { command, args, env, stdin, stdout, stderr } = io;
  if (command === '' || hasNul(command)) return undefined;
  let argv = `${command}\0`;
  for (const a of args) {
    if (hasNul(a)) return undefined;
    argv += `${a}\0`;
  }
  const envs = packEnv(env);
  return envs === undefined ? undefined : [command, argv, envs, stdin, stdout, stderr];
}

/** NAME=value\0 each; undefined if one holds a NUL. */
function packEnv(env: SpawnEnv): string | undefined {
  if (isPackable(env)) return env.packed();
  let envs = '';
  for (const k in env) {
    const v = env[k];
    if (v === undefined) continue;
    if (hasNul(k) || hasNul(v)) return undefined;
    envs += `${k}=${v}\0`;
  }
  return envs;
}

/**
 * An environment that packs itself (jobenv.ts ChildEnv): NAME=value\0 each, undefined when one
 * holds a NUL; and as an object, for child_process.
 */
export interface PackableEnv {
  packed(): string | undefined;
  record(): Record<string, string>;
}

/** A child's environment: an object, or one that packs itself. */
export type SpawnEnv = Readonly<Record<string, string | undefined>> | PackableEnv;

/** Whether env packs itself (a variable named `packed` is a string, never a function). */
export function isPackable(env: SpawnEnv): env is PackableEnv {
  return typeof (env as PackableEnv).packed === 'function';
}

function exitOf(code: number, sig: number): NativeExit {
  return sig ? { code: null, signal: signalName(sig) } : { code: code < 0 ? null : code, signal: null };
}

function spawnResult(r: number): NativeSpawnResult {
  if (r > 0) return { pid: r };
  const errno = -r;
  const code = errnoName(errno);
  if (code === 'ENOEXEC') return undefined;
  return { errno, code };
}

/** The addon's spawn flags (native/fspl_native.c). */
const SPAWN_SETSID = 1;
const SPAWN_NOWAIT = 2;
const SPAWN_SETPGID = 4;

/** Children of nativeSpawnDetached still running, by pid; reaped when SIGCHLD comes. */
const running = new Map<number, (exit: NativeExit) => void>();
let sweeper: NodeJS.Timeout | undefined;

/** Reap the children of nativeSpawnDetached that have exited, and call their onExit. */
function sweep(): void {
  const b = loadedNative();
  if (!b?.reap) return;
  const exited: Array<[(exit: NativeExit) => void, NativeExit]> = [];
  for (const [pid, onExit] of running) {
    const r = b.reap(pid);
    if (r === null) continue;
    running.delete(pid);
    exited.push([onExit, exitOf(r[0], r[1])]);
  }
  for (const [onExit, exit] of exited) onExit(exit);
}

function watch(): void {
  if (sweeper) return;
  process.on('SIGCHLD', sweep);
  // Signals coalesce, and one may come before this listener is in place: a slow sweep catches what
  // a signal missed, and stops listening a while after the last child (not at once: a net runner
  // often has none for an instant).
  sweeper = setInterval(() => {
    sweep();
    if (running.size === 0) unwatch();
  }, 500).unref();
}

function unwatch(): void {
  if (!sweeper) return;
  process.off('SIGCHLD', sweep);
  clearInterval(sweeper);
  sweeper = undefined;
}

/** What nativeSpawnDetached reports once the start has happened: as NativeSpawnResult. */
export type DetachedStart = NativeSpawnResult;

/**
 * nativeSpawn for a child in a session of its own, started in `cwd` (undefined: ours), on the
 * addon's spawner thread (a start waits for the exec), reaped on SIGCHLD, not on the pool.
 * `onStarted` comes later, never before this returns: the pid, an errno, or undefined (leave it to
 * child_process); the descriptors must stay open until then. `onExit` follows once it is reaped.
 * Returns false (and calls nothing) when the addon is missing or can't take the job.
 */
export function nativeSpawnDetached(
  io: SpawnIo,
  cwd: string | undefined,
  onStarted: (start: DetachedStart) => void,
  onExit: (exit: NativeExit) => void,
): boolean {
  const b = loadNative();
  const head = b?.reap && packHead(io);
  if (!b || !head) return false;
  const started = (r: number) => {
    const res = spawnResult(r);
    // ENOSYS: a sandbox refuses the child a table of its own (native/child_start.c); child_process does it.
    if (!res || !('pid' in res)) return onStarted(res && res.code === 'ENOSYS' ? undefined : res);
    running.set(res.pid, onExit);
    watch();
    onStarted(res); // first: a kill asked for before the pid was known is sent while it is ours
    // Its SIGCHLD may have come and gone before the pid was in `running`: it is then a zombie
    // that only this reap will see (the 500 ms sweep aside).
    reapOne(res.pid);
  };
  if (b.spawnStart) b.spawnStart(...head, cwd ?? null, SPAWN_SETSID, started);
  else {
    const r = b.spawn(...head, null, cwd ?? null, SPAWN_SETSID | SPAWN_NOWAIT);
    queueMicrotask(() => started(r));
  }
  return true;
}

/** Reap one child of nativeSpawnDetached if it has exited, and call its onExit. */
function reapOne(pid: number): void {
  const onExit = running.get(pid);
  const r = onExit && loadedNative()?.reap?.(pid);
  if (!onExit || !r) return;
  running.delete(pid);
  onExit(exitOf(r[0], r[1]));
}

let errnoNames: Map<number, string> | undefined;

function errnoName(errno: number): string {
  if (!errnoNames) {
    errnoNames = new Map();
    for (const [name, num] of Object.entries(osConstants().errno)) if (!errnoNames.has(num)) errnoNames.set(num, name);
  }
  return errnoNames.get(errno) ?? `Unknown system error ${-errno}`;
}
