/**
 * The optional native addon (native/fspl_native.c, built by `npm run build` into
 * native/build/Release/fspl_native.node) and typed wrappers around it: posix_spawn instead of
 * Node's fork, header scans in C, copies inside the kernel (why: docs/architecture.md, "The optional
 * native addon"). Optional: without it, or with FSPL_NO_NATIVE=1 (read on every
 * call, so tests can switch it), loadNative() is undefined and callers use the pure-Node code.
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * What the addon's spawns take first: the program, argv and the environment packed (NUL-separated), the descriptors.
 */
type SpawnHead = [file: string, argv: string, env: string, stdin: number, stdout: number, stderr: number];

/** The addon's functions; an optional one is absent from addons built before it. */
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
  openHead?(path: string, max: number): [number, number, ParsedArrays | null] | number;
  copy?(inFd: number, outFd: number, limit: number): [number, number];
  /** flock(2): 0 or the errno (src/sys/lock.ts). */
  flock?(fd: number, operation: number): number;
  /** stat(2) of each path: inode, mtimeMs, ctimeMs into out, 3 a path (NaN inode: failed). src/sys/stamps.ts. */
  stamps?(paths: readonly string[], out: Float64Array): void;
  /** A directory's names but . and .., if at most max (else null), or the errno (src/sys/io.ts forEachDirName). */
  names?(dir: string, max: number): string[] | null | number;
  /** File operations in order on one pool thread (src/sys/fs-batch.ts). */
  fsBatch?(ops: Array<Array<number | string | Buffer>>, done: (results: Int32Array) => void): void;
  /** The same, on the calling thread (runBatchSync). */
  fsBatchSync?(ops: Array<Array<number | string | Buffer>>): Int32Array;
}

/** kinds (-1 not parsed, 0 NOP, 1 Fail, 2 Command), seqs, secs, nanos, per-file layout index, layout, data. */
export type ParsedArrays = [Int32Array, BigUint64Array, BigInt64Array, Uint32Array, Int32Array, Int32Array, Buffer];

const ADDON = 'native/build/Release/fspl_native.node';
/** Where the addon is relative to this module: src/ or dist/ (../), or dist/bundle/ (../../). */
const CANDIDATES = ['../../', '../../../'];

let loaded: Binding | null | undefined;

function load(): Binding | null {
  // import.meta.dirname, not import.meta.url: a path needs no URL made and parsed (the bundle
  // gives each chunk's directory).
  const dir = import.meta.dirname;
  if (process.platform !== 'linux' || dir === undefined) return null;
  for (const up of CANDIDATES) {
    const file = path.join(dir, up, ADDON);
    if (!fs.existsSync(file)) continue;
    try {
      // What require() does with a .node file, without the resolution before it (a package.json
      // read, a stat of each directory on the way), which costs more than the load itself
      // (docs/benchmarks-notes.md, "Loading the addon"). Loaded once (`loaded`).
      const module = { exports: {} as Binding };
      process.dlopen(module, file);
      const b = module.exports;
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
 * addon's spawner thread (posix_spawn waits for the exec), reaped on SIGCHLD, not on the pool.
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
    for (const [name, num] of Object.entries(osConstants().errno)) if (!errnoNames.has(num)) errnoNames.set(num, name);
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

/** flock(2)'s operations, as fs-ext names them, and their bits (LOCK_SH 1, LOCK_EX 2, LOCK_NB 4, LOCK_UN 8). */
export const FLOCK = { exnb: 6, shnb: 5, un: 8 } as const;

/** flock(2) through the addon (an operation of FLOCK): 0 or the errno; undefined without it (or its flock). */
export function nativeFlock(fd: number, operation: number): number | undefined {
  return loadNative()?.flock?.(fd, operation);
}
