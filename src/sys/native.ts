/**
 * The optional native addon (native/fspl_native.c, built by `npm run build` into
 * native/build/Release/fspl_native.node) and typed wrappers around it: a clone and exec
 * (native/child_start.c) instead of Node's fork, header scans in C, copies inside the kernel (why: docs/architecture.md, "The optional
 * native addon"). Optional: without it, or with FSPL_NO_NATIVE=1 (read on every
 * call, so tests can switch it), loadNative() is undefined and callers use the pure-Node code.
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * What the addon's spawns take first: the program, argv and the environment packed (NUL-separated), the descriptors.
 */
export type SpawnHead = [file: string, argv: string, env: string, stdin: number, stdout: number, stderr: number];

/** The addon's functions; an optional one is absent from addons built before it. */
export interface Binding {
  version: number;
  spawn(
    ...args: [...SpawnHead, onExit: ((...exit: ExitArgs) => void) | null, cwd?: string | null, flags?: number]
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
  /** A seqfile's first bytes into buf, opened as openExisting opens it (singleLink): their count, or < 0 (seqfile.ts). */
  readSmall?(path: string, buf: Buffer): number;
  /** A lock file opened as openLockFile opens it, and locked (LOCK_EX|LOCK_NB): its fd, or < 0 (lock.ts). */
  lockOpen?(path: string, create: boolean): number;
  /** stat(2) (lstat(2) without follow): mode, uid, gid and size into out; 0, or -errno. */
  statInfo?(path: string, follow: boolean, out: Float64Array): number;
  /** stat(2) of each path: inode, mtimeMs, ctimeMs into out, 3 a path (NaN inode: failed). src/sys/stamps.ts. */
  stamps?(paths: readonly string[], out: Float64Array): void;
  /** A directory's names but . and .., if at most max (else null), or the errno (src/sys/io.ts forEachDirName). */
  names?(dir: string, max: number): string[] | null | number;
  /** File operations in order on one pool thread (src/sys/fs-batch.ts). */
  fsBatch?(ops: Array<Array<number | string | Buffer>>, done: (results: Int32Array) => void): void;
  /** The same, on the calling thread (runBatchSync). */
  fsBatchSync?(ops: Array<Array<number | string | Buffer>>): Int32Array;
  /** Arm a running child: at its exit with status 0, a batch, then a start (nativeChain); absent from older addons. */
  chain?(
    ...args: [
      pid: number,
      record: EncodedOp[],
      ...SpawnHead,
      flags: number,
      jobPath: string,
      jobIno: number,
      onExit: (...exit: ExitArgs) => void,
    ]
  ): boolean;
  unchain?(pid: number): boolean;
}

/** An operation of a batch as the addon takes it (fs-batch.ts encodes them). */
export type EncodedOp = Array<number | string | Buffer>;

/** What the addon calls onExit with: code and signal; after a chain fired, the record's results and the next pid (or -errno, or 0). */
export type ExitArgs = [code: number, signal: number, results?: Int32Array, next?: number];

/** kinds (-1 not parsed, 0 NOP, 1 Fail, 2 Command), seqs, secs, nanos, per-file layout index, layout, data. */
export type ParsedArrays = [Int32Array, BigUint64Array, BigInt64Array, Uint32Array, Int32Array, Int32Array, Uint8Array];

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

/** The addon if it was loaded, whatever FSPL_NO_NATIVE says now: the children it started are reaped through it. */
export function loadedNative(): Binding | undefined {
  return loaded ?? undefined;
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

/**
 * A small file's first bytes into buf through the addon, in one call: their count; undefined
 * without it, or when anything failed (the caller does it again through Node's fs, which then says
 * what, in its words).
 */
export function nativeReadSmall(file: string, buf: Buffer): number | undefined {
  const n = loadNative()?.readSmall?.(file, buf);
  return n === undefined || n < 0 ? undefined : n;
}

/** What stat(2) (lstat(2) without follow) says of a name that a look or a lock asks about. */
export interface StatInfo {
  mode: number;
  uid: number;
  gid: number;
  size: number;
}

const statOut = new Float64Array(4);

/**
 * A name's mode, owner and size through the addon, without an fs.Stats and its four Dates: the
 * StatInfo; null when there is nothing at the name (ENOENT, ENOTDIR); undefined without the addon,
 * or on any other error (the caller asks Node's fs, which says what).
 */
export function nativeStatInfo(file: string, follow: boolean): StatInfo | null | undefined {
  const r = loadNative()?.statInfo?.(file, follow, statOut);
  if (r === undefined) return undefined;
  if (r === -2 || r === -20) return null; // ENOENT, ENOTDIR: as throwIfNoEntry: false says it
  if (r < 0) return undefined;
  return { mode: statOut[0]!, uid: statOut[1]!, gid: statOut[2]!, size: statOut[3]! };
}

/** A lock file opened, checked and locked through the addon, in one call: its fd; undefined as nativeReadSmall. */
export function nativeLockOpen(file: string, create: boolean): number | undefined {
  const fd = loadNative()?.lockOpen?.(file, create);
  return fd === undefined || fd < 0 ? undefined : fd;
}
