/**
 * Staging: where a firing's files live until its commit copies them into tokens (its output, its
 * stderr, a batch's stdin, an and-merge's input payloads, a move's checked copy of its signed
 * inputs' payloads, a failed firing's for its error tokens), and how they go once the firing is
 * done with them.
 *
 * All of them are in the run's one staging directory, named by the firing (its transition, id
 * and attempt: the prefix `dir`), so no directory is made or removed per firing. A firing run as
 * another user gets a directory of its own (`dir`), which stays the runner's (mode 0711): every
 * name in it is made by the runner (O_EXCL), the files its command reads or writes through a
 * descriptor are handed to that user by fchown. Only a command with several output places writes
 * files by name: into `dir/out/`, which its user owns (0700); once it has ended, each of those is
 * claimed into `dir` (untrusted.ts claimFile: a regular file of that user's, the one checked), so
 * the commit never opens a name that user can change. docs/security.md says why.
 *
 * Removal is swept: the names of every firing dropped while a sweep is under way go together in
 * the next one, one batch of unlinks on a pool thread (fs-batch.ts), not one hand-off per name.
 *
 * Durability: none needed. Staging files are scratch: their contents reach a token only through
 * a `.part` that the commit fsyncs (commit.ts), and staging/ is emptied at every open of the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UntrustedFileError } from '../../base/errors.js';
import { type BatchOp, runBatch } from '../../sys/fs-batch.js';
import { closeQuietly } from '../../sys/io.js';
import { claimFile, type FileOwner, openExisting, removeTree } from '../../sys/untrusted.js';
import type { TransitionSpec } from '../model/model.js';
import { giveDir, type RunAs } from './permissions.js';

/** A firing's staging files, by what they hold. */
export interface StagingFiles {
  stderr: string;
  stdout: string;
  batch: string;
  /** Output p, as the commit reads it. */
  out(place: string): string;
  /**
   * Output p, where the command writes it by name (FSPL_OUT_p): out(p), or in `outDir` when it runs as another user.
   */
  written(place: string): string;
  in(place: string): string;
  /** The checked copy of a failed firing's i-th signed input, for its error token (inputs.ts keepCopies). */
  kept(i: number): string;
  /** The directory of the outputs written by name, its user's: only for a firing run as another user. */
  outDir?: string;
}

/** A firing's files: under the prefix `dir`, or in the directory `dir` when it runs as another user. */
export function stagingOf(dir: string, runAs: RunAs | undefined): StagingFiles {
  const at = runAs ? `${dir}${path.sep}f` : dir;
  const out = (p: string) => `${at}.out-${p}`;
  const outDir = runAs ? `${dir}${path.sep}out` : undefined;
  return {
    stderr: `${at}.stderr`,
    stdout: `${at}.stdout`,
    batch: `${at}.batch`,
    out,
    written: outDir ? (p) => `${outDir}${path.sep}f.out-${p}` : out,
    in: (p) => `${at}.in-${p}`,
    kept: (i) => `${at}.kept-${i}`,
    outDir,
  };
}

/** Every name a firing of t may have made (when it is not known which it did). */
export function everyStagedName(t: TransitionSpec, files: StagingFiles): string[] {
  const taken = t.inputs.reduce((n, a) => n + a.take, 0);
  const kept = Array.from({ length: taken }, (_, i) => files.kept(i));
  return [
    files.stderr,
    files.stdout,
    files.batch,
    ...t.outputs.map(files.out),
    ...t.inputs.map((a) => files.in(a.place)),
    ...kept,
  ];
}

/**
 * A firing run as another user: its directory the runner's (0711), where only the runner makes
 * names; with several outputs, out/ for the files its command writes by name, its user's (0700).
 * Not fsynced: staging is scratch, emptied at every open of the run (staging.ts).
 */
export function makeStagingDir(dir: string, files: StagingFiles, single: boolean, runAs: RunAs): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o711 });
  if (!single && files.outDir) {
    fs.mkdirSync(files.outDir, { mode: 0o700 });
    giveDir(files.outDir, runAs); // by name: made just now, in a directory only the runner writes
  }
}

/** Whether output o was written by name (FSPL_OUT_o, ctx.outputs): a link too, which claimOutputs refuses. */
export function wasWritten(files: StagingFiles, o: string): boolean {
  return fs.lstatSync(files.written(o), { throwIfNoEntry: false }) !== undefined; // one call: a link is there too
}

/**
 * The outputs a command or function wrote by name, checked before the commit reads them: each must
 * be a regular file (a link, a FIFO: the firing fails, with the reason returned). Those of a
 * command run as another user are claimed from its out/ into the runner's own directory
 * (untrusted.ts claimFile: a regular file of that user's, the one checked), so that what the
 * commit reads is a name only the runner can change.
 */
export function claimOutputs(
  runAs: RunAs | undefined,
  files: StagingFiles,
  outputs: Map<string, unknown>,
): string | undefined {
  for (const o of [...outputs.keys()]) {
    try {
      if (runAs) {
        if (!claimFile(files.written(o), files.out(o), runAs.uid)) outputs.delete(o);
      } else if (!fs.lstatSync(files.written(o)).isFile()) {
        throw new UntrustedFileError(files.written(o), 'it is not a regular file');
      }
    } catch (err) {
      outputs.clear();
      return err instanceof UntrustedFileError ? err.message : `cannot take its output ${o}: ${(err as Error).message}`;
    }
  }
  return undefined;
}

/** A missing or extra output file is a failure: why, or undefined. */
export function judgeOutputs(t: TransitionSpec, written: ReadonlyMap<string, unknown>): string | undefined {
  const n = written.size;
  if (t.outMode === 'all' && n < t.outputs.length) {
    const missing = t.outputs.filter((o) => !written.has(o));
    return `wrote no output for ${missing.join(', ')}`;
  }
  if (t.outMode === 'one-of' && n !== 1)
    return n === 0
      ? 'wrote none of its one-of outputs'
      : `wrote ${n} of its one-of outputs (${[...written.keys()].join(', ')})`;
  return undefined;
}

/**
 * A file the runner makes for a command run as another user: that user's alone (0600), so that it
 * may reopen it (/dev/stdout) and no one else may read it; its name stays the runner's.
 */
export function userFile(runAs: RunAs | undefined): FileOwner | undefined {
  return runAs ? { uid: runAs.uid, gid: runAs.gid, mode: 0o600 } : undefined;
}

/** The last `bytes` of a staging file (a firing's stderr), '' if it can't be read. */
export function tailOf(file: string, bytes: number): string {
  let fd: number | undefined;
  try {
    fd = openExisting(file).fd;
    const size = fs.fstatSync(fd).size;
    const n = Math.min(size, bytes);
    const buf = Buffer.alloc(n);
    fs.readSync(fd, buf, 0, n, size - n);
    return buf.toString('utf8');
  } catch {
    return '';
  } finally {
    closeQuietly(fd);
  }
}

/**
 * A sweep waits this long for more firings' names (or until SWEEP_NAMES are queued), so that
 * firings finishing one by one share a hand-off to the pool; scratch lingering costs nothing.
 */
const SWEEP_DELAY_MS = 20;
const SWEEP_NAMES = 256;

/** Removes firings' staging files, many firings' in one batch. */
export class StagingSweeper {
  private queued: string[] = [];
  private sweeping = false;
  private idleWaiters: Array<() => void> = [];
  /** The wait for more names before a sweep (SWEEP_DELAY_MS). */
  private timer: NodeJS.Timeout | undefined;

  /**
   * Remove a firing's files: those it made, when known (RanOutcome.made), else every name it may
   * have made. A move stages nothing, but the checked copy of its signed inputs' payloads (made).
   */
  remove(t: TransitionSpec, dir: string, runAs: RunAs | undefined, made?: readonly string[]): void {
    if (!t.run && !t.fn && !made?.length) return;
    if (runAs) {
      // Its out/ is its user's: removed without following a name through it (untrusted.ts).
      removeTree(dir);
      return;
    }
    const names = made ?? everyStagedName(t, stagingOf(dir, runAs));
    if (names.length === 0) return;
    for (const n of names) this.queued.push(n);
    if (this.queued.length >= SWEEP_NAMES) this.sweepNow();
    else if (!this.sweeping && !this.timer) {
      this.timer = setTimeout(() => this.sweepNow(), SWEEP_DELAY_MS);
      this.timer.unref();
    }
  }

  /** Resolves once every file handed to remove() so far is gone. */
  async idle(): Promise<void> {
    if (this.timer) this.sweepNow();
    if (!this.sweeping) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Sweep what is queued now (or, with a sweep under way, when it ends: it takes the queue too). */
  private sweepNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.sweeping) return;
    this.sweeping = true;
    void this.sweep();
  }

  private async sweep(): Promise<void> {
    try {
      while (this.queued.length > 0) {
        const names = this.queued;
        this.queued = [];
        // Nothing reads these names again: a failure (other than ENOENT, which is no failure) only
        // leaves scratch behind, which the run's next open clears.
        await runBatch(names.map((p): BatchOp => ({ op: 'unlink', path: p, missingOk: true })));
      }
    } catch {
      this.queued = []; // as above: scratch left for the next open
    }
    this.sweeping = false;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
