/**
 * The operations of a batch (fs-batch.ts), and what their results mean: shared by the addon's
 * path and the pure-Node one (fs-batch-node.ts).
 */
/** How a writeFile's file is made: see untrusted.ts. */
export interface NewFile {
  replace?: boolean;
  owner?: { uid: number; gid: number; mode: number };
}

/** One operation. */
export type FsOp =
  /**
   * open(O_RDONLY|O_DIRECTORY), fsync, close: the names made in it so far are durable. A
   * directory that cannot be fsynced at all succeeds (as durable.ts's fsyncDir). Skipped under
   * FSPL_BENCH_NO_DIRSYNC. With `fd`, a descriptor of that directory the caller holds open, only
   * the fsync.
   */
  | { op: 'fsyncDir'; path: string; fd?: number }
  | { op: 'fsync'; fd: number }
  /**
   * Durable only once its directory is fsynced: a caller that needs it to survive a power cut puts
   * an fsyncDir of the target's directory after it (the commit's steps 2, 4 and 5 do).
   */
  | { op: 'rename'; from: string; to: string; missingOk?: boolean }
  | { op: 'unlink'; path: string; missingOk?: boolean }
  /** Its result is the descriptor. */
  | { op: 'open'; path: string; flags: number; mode: number }
  /**
   * open, write all of data, fsync, close: the bytes are durable; the new name only with an
   * fsyncDir after. `replace`: whatever is at the path is unlinked first (for O_EXCL|O_NOFOLLOW
   * flags in a directory others may write: untrusted.ts); `owner`: set through the descriptor.
   */
  | ({ op: 'writeFile'; path: string; flags: number; mode: number; data: Buffer } & NewFile)
  | { op: 'close'; fd: number }
  /** Write all of data at the descriptor's offset (an O_APPEND file: its end), then fsync it. */
  | { op: 'append'; fd: number; data: Buffer }
  /**
   * As writeFile, with all of the file `from` after data (copy_file_range where it can); `from` is
   * opened without following a link, and must be a regular file.
   */
  | ({ op: 'writeFileFrom'; path: string; flags: number; mode: number; data: Buffer; from: string } & NewFile)
  /** Write all of data at this position (the descriptor's offset unchanged), then fdatasync if `datasync`. */
  | { op: 'pwrite'; fd: number; position: number; data: Buffer; datasync: boolean };

/**
 * must: should it fail, the operations after it are not run (their result: -ECANCELED).
 * missingOk (a rename or an unlink): ENOENT is no failure, neither for `must` nor for firstFailure.
 */
export type BatchOp = FsOp & { must?: boolean };

/**
 * An errno as a result says it: its number, negated. node:os's table is read when one is wanted, not
 * when this module loads (queue-process loads it at every start).
 */
export function errnoResult(name: 'ENOENT' | 'ECANCELED' | 'EIO' | 'EINVAL'): number {
  return -process.getBuiltinModule('node:os').constants.errno[name];
}

/** A failure that is none: ENOENT for an operation with missingOk. */
export function missingIsOk(o: FsOp, result: number): boolean {
  return 'missingOk' in o && o.missingOk === true && result === errnoResult('ENOENT');
}

/** Whether a result stops the batch: a failed `must` operation (a missing file with missingOk aside). */
export function stops(o: BatchOp, result: number): boolean {
  return result < 0 && o.must === true && !missingIsOk(o, result);
}
