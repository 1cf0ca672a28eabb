/**
 * File operations run in order, as one batch: with the native addon, all of them on one of
 * libuv's pool threads, in one hand-off (native/fs_batch.c); without it (or with FSPL_NO_NATIVE=1),
 * one after the other through Node's fs API, one hand-off each, with the same results.
 * runBatchSync runs a batch on the calling thread: in one call into the addon, or through Node's
 * synchronous fs calls. Why: a group commit's dozens of calls cost more in hand-offs to the pool
 * than in system calls; and a batch keeps its order ("rename these, then fsync their directory").
 */
import util from 'node:util';
import { dirSyncSkipped } from './durable.js';
import { fallback, fallbackSync } from './fs-batch-node.js';
import { type BatchOp, type FsOp, missingIsOk } from './fs-ops.js';
import { type EncodedOp, loadNative } from './native.js';

export type { BatchOp, FsOp } from './fs-ops.js';

const CODES = {
  fsyncDir: 1,
  fsync: 2,
  rename: 3,
  unlink: 4,
  open: 5,
  writeFile: 6,
  close: 7,
  append: 8,
  writeFileFrom: 9,
  pwrite: 10,
} as const;
const MUST = 0x100;
const MISSING_OK = 0x200;
const REPLACE = 0x400;

/**
 * Run the operations in order. Never rejects for a failed operation: each one's result is in the
 * array, >= 0 on success (open: its descriptor), -errno on failure. See firstFailure.
 */
export async function runBatch(ops: readonly BatchOp[]): Promise<Int32Array> {
  const run = opsToRun(ops);
  return resultsOfAll(ops, run, run.length === 0 ? new Int32Array(0) : await runOps(run));
}

/**
 * runBatch on the calling thread, for a caller with nothing else to do meanwhile (queue-process
 * recording a finished job): one call into the addon, or Node's synchronous fs calls.
 */
export function runBatchSync(ops: readonly BatchOp[]): Int32Array {
  const native = nativeBatch(ops);
  if (native) return native.run();
  const run = opsToRun(ops);
  return resultsOfAll(ops, run, run.length === 0 ? new Int32Array(0) : fallbackSync(run));
}

/** A batch as the addon takes it: its operations encoded, and how the addon's results read as runBatchSync's. */
export interface NativeBatch {
  encoded: EncodedOp[];
  results(raw: Int32Array): Int32Array;
  /** Run it now, on this thread (the addon's fsBatchSync): the results, read. */
  run(): Int32Array;
}

/**
 * `ops` for the addon to run where no JavaScript runs (runBatchSync, and a chained start: the record
 * of a job made at its exit, exec-chain.ts); undefined without the addon's batch, or with a NUL in a path.
 */
export function nativeBatch(ops: readonly BatchOp[]): NativeBatch | undefined {
  const run = opsToRun(ops);
  const sync = loadNative()?.fsBatchSync;
  if (!sync || hasNul(run)) return undefined;
  const encoded = run.map(encode);
  const results = (raw: Int32Array) => resultsOfAll(ops, run, raw);
  return { encoded, results, run: () => results(encoded.length === 0 ? new Int32Array(0) : sync(encoded)) };
}

/** Directory fsyncs the bench switched off (FSPL_BENCH_NO_DIRSYNC) succeed without running. */
function opsToRun(ops: readonly BatchOp[]): readonly BatchOp[] {
  return dirSyncSkipped() ? ops.filter((o) => o.op !== 'fsyncDir') : ops;
}

/** The results of `ops`, from those of the operations that ran (opsToRun): 0 for the others. */
function resultsOfAll(ops: readonly BatchOp[], run: readonly BatchOp[], results: Int32Array): Int32Array {
  if (run === ops) return results;
  const all = new Int32Array(ops.length);
  let k = 0;
  ops.forEach((o, i) => (all[i] = o.op === 'fsyncDir' ? 0 : results[k++]!));
  return all;
}

/** A NUL in a path: Node's own calls refuse it with their usual error. */
function hasNul(ops: readonly BatchOp[]): boolean {
  return ops.some((o) => pathsOf(o).some((p) => p.includes('\0')));
}

/** libuv's pool has 4 threads unless UV_THREADPOOL_SIZE says otherwise. */
const POOL_THREADS = 4;

/**
 * Independent operations (no order among them, no `must`) split into up to 4 batches that run at
 * once, one operation per 8 or more in each: fsyncs of many files on a disk (ext4) finish far
 * sooner side by side (the file system commits its journal once for several of them) than one
 * after the other on one thread.
 */
export async function runBatchesAtOnce(ops: readonly BatchOp[]): Promise<Int32Array> {
  const lanes = Math.min(POOL_THREADS, Math.ceil(ops.length / 8));
  if (lanes <= 1) return runBatch(ops);
  const split = Array.from({ length: lanes }, (_, k) => ops.filter((_, i) => i % lanes === k));
  const done = await Promise.all(split.map((part) => runBatch(part)));
  const out = new Int32Array(ops.length);
  for (let i = 0; i < ops.length; i++) out[i] = done[i % lanes]![Math.floor(i / lanes)]!;
  return out;
}

function runOps(ops: readonly BatchOp[]): Promise<Int32Array> {
  const b = loadNative();
  if (!b?.fsBatch || hasNul(ops)) return fallback(ops);
  return new Promise((resolve) => b.fsBatch!(ops.map(encode), resolve));
}

function encode(o: BatchOp): EncodedOp {
  const code =
    CODES[o.op] |
    (o.must ? MUST : 0) |
    ('missingOk' in o && o.missingOk ? MISSING_OK : 0) |
    ('replace' in o && o.replace ? REPLACE : 0);
  const owner = 'owner' in o && o.owner ? [o.owner.uid, o.owner.gid, o.owner.mode] : [-1, -1, 0];
  switch (o.op) {
    case 'fsyncDir':
      return o.fd === undefined ? [code, o.path] : [code, o.path, o.fd];
    case 'unlink':
      return [code, o.path];
    case 'fsync':
    case 'close':
      return [code, o.fd];
    case 'rename':
      return [code, o.from, o.to];
    case 'open':
      return [code, o.path, o.flags, o.mode];
    case 'writeFile':
      return [code, o.path, o.flags, o.mode, o.data, ...owner];
    case 'append':
      return [code, o.fd, o.data];
    case 'writeFileFrom':
      return [code, o.path, o.flags, o.mode, o.data, o.from, ...owner];
    case 'pwrite':
      return [code, o.fd, o.position, o.data, o.datasync ? 1 : 0];
  }
}

function pathsOf(o: FsOp): string[] {
  if (o.op === 'rename') return [o.from, o.to];
  if (o.op === 'writeFileFrom') return [o.path, o.from];
  return 'path' in o ? [o.path] : [];
}

/**
 * The first failure among the results, as the error Node's fs would have thrown, leaving out a
 * missing file for an unlink with missingOk. Undefined when all went well.
 */
export function firstFailure(ops: readonly FsOp[], results: Int32Array): NodeJS.ErrnoException | undefined {
  for (let i = 0; i < ops.length; i++) {
    const r = results[i]!;
    if (r >= 0) continue;
    const o = ops[i]!;
    const err = batchError(o, r);
    if (missingIsOk(o, r)) continue;
    return err;
  }
  return undefined;
}

/**
 * Steps run as one batch, one after the other (from step `from` on; `results` are the batch's):
 * the first that failed, and its first failure (as firstFailure). A step after a failed `must`
 * operation was not run (ECANCELED): the first failure is the one that stopped the batch.
 */
export function firstFailedStep(
  steps: readonly (readonly BatchOp[])[],
  from: number,
  results: Int32Array,
): { step: number; err: NodeJS.ErrnoException } | undefined {
  let at = 0;
  for (let step = from; step < steps.length; step++) {
    const ops = steps[step]!;
    const err = firstFailure(ops, results.subarray(at, at + ops.length));
    if (err) return { step, err };
    at += ops.length;
  }
  return undefined;
}

/** An operation's failure as Node reports one (code, errno, syscall, path). */
export function batchError(o: FsOp, errno: number): NodeJS.ErrnoException {
  const code = util.getSystemErrorName(errno);
  const syscall =
    o.op === 'fsyncDir'
      ? 'fsync'
      : o.op === 'writeFile' || o.op === 'writeFileFrom' || o.op === 'append' || o.op === 'pwrite'
        ? 'write'
        : o.op;
  const where = o.op === 'rename' ? ` '${o.from}' -> '${o.to}'` : 'path' in o ? ` '${o.path}'` : '';
  const err: NodeJS.ErrnoException = new Error(`${code}: ${syscall}${where}`);
  err.errno = errno;
  err.code = code;
  err.syscall = syscall;
  if (o.op === 'rename') err.path = o.from;
  else if ('path' in o) err.path = o.path;
  return err;
}
