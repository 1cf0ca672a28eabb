/**
 * The optional native addon (native/fspl_native.c, built by `npm run build` into
 * native/build/Release/fspl_native.node) and typed wrappers around it.
 *
 * Why native code: costs that Node's own APIs cannot bring down:
 * - child_process.spawn fork()s the whole Node process (libuv 1.46 on Linux uses neither vfork
 *   nor posix_spawn), which made a queue of /bin/true jobs several times slower than the
 *   reference. posix_spawn (glibc: clone with CLONE_VFORK, no page-table copy) does the same at a
 *   fraction of the cost ("Spawning jobs: posix_spawn through the addon"). No npm library offers
 *   that without a far larger native dependency; execa, built on child_process, is slower still.
 *   A net runner starts its firings the same way (nativeSpawnDetached), where the fork also held
 *   the main thread. And as posix_spawn itself waits for the child's exec, longer on a loaded
 *   machine, a firing's start happens on a thread of the addon's, off the event loop ("Starting a
 *   firing off the event loop").
 * - A queue scan is open + pread + close per job file; through Node's synchronous fs bindings
 *   each call carries overhead, which kept `queue-ls` of a big queue well above its target. The
 *   addon does the three calls per file in C, and decodes the headers written in the usual
 *   encoding there too (the JS MessagePack decoder, cold at start-up, was most of the scan), with
 *   two threads sharing the system calls: the first scan, and `queue-ls`, take a fraction of the
 *   time ("Scanning a queue in C").
 * - Payload copies (src/sys/copy.ts): splice(2) and copy_file_range(2) move the bytes inside the
 *   kernel, which Node has no API for; a read/write loop copies every byte in and out of a buffer.
 *
 * Everything works without it: loadNative() returns undefined when the addon was not built (no
 * compiler on the machine, a failed build, another platform) or when FSPL_NO_NATIVE=1 is set in
 * the environment, and callers then use the pure-Node code. The variable is read on every call,
 * so tests can switch it.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * What the addon's spawns take first: the program, argv and the environment packed (NUL-separated), the descriptors.
 */
type SpawnHead = [file: string, argv: string, env: string, stdin: number, stdout: number, stderr: number];

interface Binding {
  version: number;
  spawn(
    ...args: [
      ...SpawnHead,
      onExit: ((code: number, signal: number) => void) | null,
      cwd?: string | null,
      flags?: number,
    ]
  ): number;
  /** Absent from addons built before it was added (as are spawn's cwd and flags). */
  reap?(pid: number): [number, number] | null;
  /** The spawn flags this build knows; absent from addons built before SPAWN_SETPGID. */
  spawnFlags?: number;
  /** spawn with SPAWN_NOWAIT, performed on the addon's spawner thread; absent from older addons. */
  spawnStart?(
    ...args: [...SpawnHead, cwd: string | null, flags: number, onStarted: (pidOrErrno: number) => void]
  ): void;
  readHeads(
    dir: string,
    names: string,
    count: number,
    max: number,
    parse: boolean,
  ): [Buffer, Int32Array, ParsedArrays?] | number;
  /** Absent from addons built before it was added. */
  openHead?(path: string, max: number): [number, number, ParsedArrays | null] | number;
  /** Absent from addons built before it was added. */
  copy?(inFd: number, outFd: number, limit: number): [number, number];
  /** flock(2): 0 or the errno (src/sys/lock.ts). Absent from addons built before it was added. */
  flock?(fd: number, operation: number): number;
  /**
   * File operations in order on one pool thread (src/sys/fs-batch.ts). Absent from addons built before it was added.
   */
  fsBatch?(ops: Array<Array<number | string | Buffer>>, done: (results: Int32Array) => void): void;
  /**
   * The same, on the calling thread (src/sys/fs-batch.ts runBatchSync). Absent from addons built before it was added.
   */
  fsBatchSync?(ops: Array<Array<number | string | Buffer>>): Int32Array;
}

/** kinds (-1 not parsed, 0 NOP, 1 Fail, 2 Command), seqs, secs, nanos, per-file layout index, layout, data. */
export type ParsedArrays = [Int32Array, BigUint64Array, BigInt64Array, Uint32Array, Int32Array, Int32Array, Buffer];

const ADDON = 'native/build/Release/fspl_native.node';
/** Where the addon is relative to this module: src/ or dist/ (../), or dist/bundle/ (../../). */
const CANDIDATES = ['../../', '../../../'];

let loaded: Binding | null | undefined;

function load(): Binding | null {
  if (process.platform !== 'linux') return null;
  for (const up of CANDIDATES) {
    let file: string;
    try {
      file = fileURLToPath(new URL(up + ADDON, import.meta.url));
    } catch {
      continue;
    }
    if (!fs.existsSync(file)) continue;
    try {
      const b = createRequire(import.meta.url)(file) as Binding;
      if (b && b.version === 1 && typeof b.spawn === 'function' && typeof b.readHeads === 'function') return b;
    } catch {
      // Built for another platform or Node, or damaged: use the fallback.
    }
    return null;
  }
  return null;
}

/** Whether FSPL_NO_NATIVE asks for the pure-Node code. */
export function nativeDisabled(): boolean {
  const v = process.env.FSPL_NO_NATIVE;
  return v !== undefined && v !== '' && v !== '0';
}

/** The addon, or undefined when it is missing, cannot be loaded, or FSPL_NO_NATIVE is set. */
export function loadNative(): Binding | undefined {
  if (nativeDisabled()) return undefined;
  if (loaded === undefined) loaded = load();
  return loaded ?? undefined;
}

// ------------------------------------------------------------------------------------------------
// spawn

export interface NativeExit {
  /** The exit status, or null when the child was killed by a signal. */
  code: number | null;
  /** The signal's name (as child_process gives it), or null. */
  signal: NodeJS.Signals | null;
}

/** What nativeSpawn did: started the child, failed with an errno, or left the job to child_process. */
export type NativeSpawnResult = { pid: number } | { errno: number; code: string } | undefined;

let signalNames: Map<number, NodeJS.Signals> | undefined;

/** A signal number's name, as child_process reports it (SIGABRT rather than SIGIOT, and so on). */
export function signalName(n: number): NodeJS.Signals | null {
  if (!signalNames) {
    signalNames = new Map();
    // os.constants.signals lists the canonical name first (SIGABRT before SIGIOT, SIGIO before
    // SIGPOLL), as Node's own signo_string() does.
    for (const [name, num] of Object.entries(os.constants.signals))
      if (!signalNames.has(num)) signalNames.set(num, name as NodeJS.Signals);
  }
  return signalNames.get(n) ?? null;
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
 * Start `command` (looked up in the PATH of `env`, as child_process does) with `args`, exactly
 * the environment `env`, and the given descriptors as its stdin (-1: /dev/null), stdout and
 * stderr. Every signal is at its default disposition in the child, with an empty signal mask.
 * `group` 'session': the child leads a session (and process group) of its own, as
 * child_process's `detached: true`; 'group': a process group of its own, in our session.
 * `onExit` is called once it has exited. Returns undefined (nothing started) when the addon is
 * not available or the job needs child_process: strings holding NUL bytes (child_process
 * rejects them with its own message), a file that is not an executable format (ENOEXEC, which
 * child_process retries through /bin/sh as execvp(3) does), or a session that this addon or C
 * library can't give (an addon built before spawn took flags; ENOSYS). An addon built before
 * it knew process groups gives a session instead.
 */
export function nativeSpawn(
  io: SpawnIo,
  onExit: (exit: NativeExit) => void,
  group: 'ours' | 'group' | 'session' = 'ours',
): NativeSpawnResult {
  const { command, args, env, stdin, stdout, stderr } = io;
  const b = loadNative();
  // reap() came with spawn's flags: an addon without it would ignore them.
  const packed = b && (group === 'ours' || b.reap) && pack(command, args, env);
  if (!b || !packed) return undefined;
  const onExited = (code: number, sig: number) => onExit(exitOf(code, sig));
  const flags =
    group === 'ours' ? 0 : group === 'group' && (b.spawnFlags ?? 0) & SPAWN_SETPGID ? SPAWN_SETPGID : SPAWN_SETSID;
  const r = flags
    ? b.spawn(command, packed.argv, packed.env, stdin, stdout, stderr, onExited, null, flags)
    : b.spawn(command, packed.argv, packed.env, stdin, stdout, stderr, onExited);
  const res = spawnResult(r);
  return res && 'code' in res && res.code === 'ENOSYS' ? undefined : res;
}

/** argv and the environment as the addon takes them (NUL-separated); undefined if a string holds a NUL. */
function pack(command: string, args: readonly string[], env: SpawnEnv): { argv: string; env: string } | undefined {
  if (command === '' || hasNul(command)) return undefined;
  let argv = `${command}\0`;
  for (const a of args) {
    if (hasNul(a)) return undefined;
    argv += `${a}\0`;
  }
  if (isPackable(env)) {
    const envs = env.packed();
    return envs === undefined ? undefined : { argv, env: envs };
  }
  let envs = '';
  for (const k in env) {
    const v = env[k];
    if (v === undefined) continue;
    if (hasNul(k) || hasNul(v)) return undefined;
    envs += `${k}=${v}\0`;
  }
  return { argv, env: envs };
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
  const b = loaded;
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
  // Signals of the same kind coalesce, and one could come before this listener is in place
  // for a child that exits at once: a slow sweep catches whatever a signal did not. It also
  // stops listening once no child is left; not at once, since a net runner with few workers
  // often has none for an instant, and listening again for each firing was a measurable cost.
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
 * nativeSpawn for a child that leads a session (and process group) of its own, as
 * child_process's `detached: true`, started in `cwd` (undefined: ours). Many can run at once:
 * nothing waits for them on libuv's thread pool (whose 4 threads they would hold); they are
 * reaped on SIGCHLD.
 *
 * The start itself happens on the addon's spawner thread, not on this one: posix_spawn holds its
 * caller until the child has exec'd, longer on a loaded machine, which the event loop of a net
 * runner paid per firing. `onStarted` comes later (never before this returns) with the pid, or the
 * errno of a start that failed, or undefined: leave it to child_process (ENOEXEC, or a C library
 * without posix_spawn's chdir or setsid). Until then the descriptors must stay open. `onExit` comes
 * after `onStarted`, once the child is reaped. Returns false (and calls nothing) when the addon is
 * missing or can't take the job; an addon built before the spawner thread starts it here and calls
 * `onStarted` in a microtask.
 */
export function nativeSpawnDetached(
  io: SpawnIo,
  cwd: string | undefined,
  onStarted: (start: DetachedStart) => void,
  onExit: (exit: NativeExit) => void,
): boolean {
  const { command, args, env, stdin, stdout, stderr } = io;
  const b = loadNative();
  const packed = b?.reap && pack(command, args, env);
  if (!b || !packed) return false;
  const started = (r: number) => {
    const res = spawnResult(r);
    // ENOSYS: a C library without posix_spawn's chdir or setsid; child_process does it.
    if (!res || !('pid' in res)) return onStarted(res && res.code === 'ENOSYS' ? undefined : res);
    running.set(res.pid, onExit);
    watch();
    onStarted(res); // first: a kill asked for before the pid was known is sent while it is ours
    // Its SIGCHLD may have come and gone before the pid was in `running`: it is then a zombie
    // that only this reap will see (the 500 ms sweep aside).
    reapOne(res.pid);
  };
  if (b.spawnStart)
    b.spawnStart(command, packed.argv, packed.env, stdin, stdout, stderr, cwd ?? null, SPAWN_SETSID, started);
  else {
    const r = b.spawn(
      command,
      packed.argv,
      packed.env,
      stdin,
      stdout,
      stderr,
      null,
      cwd ?? null,
      SPAWN_SETSID | SPAWN_NOWAIT,
    );
    queueMicrotask(() => started(r));
  }
  return true;
}

/** Reap one child of nativeSpawnDetached if it has exited, and call its onExit. */
function reapOne(pid: number): void {
  const onExit = running.get(pid);
  const r = onExit && loaded?.reap?.(pid);
  if (!onExit || !r) return;
  running.delete(pid);
  onExit(exitOf(r[0], r[1]));
}

let errnoNames: Map<number, string> | undefined;

function errnoName(errno: number): string {
  if (!errnoNames) {
    errnoNames = new Map();
    for (const [name, num] of Object.entries(os.constants.errno)) if (!errnoNames.has(num)) errnoNames.set(num, name);
  }
  return errnoNames.get(errno) ?? `Unknown system error ${-errno}`;
}

// ------------------------------------------------------------------------------------------------
// copy

/**
 * Move up to `limit` bytes (undefined: all) from inFd to outFd inside the kernel: splice(2) when
 * either is a pipe, copy_file_range(2) between regular files. Returns the bytes moved and 0, or
 * the bytes moved before the kernel refused or failed and that errno; undefined when the addon
 * (or its copy) is not available. Either way the caller finishes with its read/write loop,
 * which also confirms the end of the input (see native/fspl_native.c).
 */
export function nativeCopy(inFd: number, outFd: number, limit?: number): { copied: number; errno: number } | undefined {
  const b = loadNative();
  if (!b?.copy) return undefined;
  const [copied, errno] = b.copy(inFd, outFd, limit ?? -1);
  return { copied, errno };
}

/** flock(2) through the addon: 0 or the errno; undefined without it (or its flock). */
export function nativeFlock(fd: number, operation: number): number | undefined {
  return loadNative()?.flock?.(fd, operation);
}
