/**
 * A queue's refused/ folder: packets that may not run (src/sign/: unsigned where signatures are
 * required, signed by a key not allowed, or not matching their signature) are moved out of jobs/
 * into it, never run and never given their number, each with a note saying why
 * (`NAME.why`, one line). The queue then waits for the real packet of that number.
 *
 * Durability, in order: the note is written and fsynced under its final name (a note without
 * its packet says what happened to a packet that is gone; never the reverse); the packet is
 * renamed from jobs/ into refused/; refused/ is fsynced (the packet is there to stay), then jobs/
 * (it is gone from there for good). A cut before the rename leaves the packet in jobs/, refused
 * again by the next run; a cut between the two fsyncs leaves it with both names, and the next run
 * drops the one in jobs/ at its first lock (finishCutRefusals).
 *
 * refused/ is the queue owner's, beside jobs/ (who may write jobs/ may not write it): the note is
 * made new all the same (untrusted.ts), never through a name someone planted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDir } from '../sys/durable.js';
import { openExisting, writeFresh } from '../sys/untrusted.js';

export const REFUSED_DIR = 'refused';
const NOTE_SUFFIX = '.why';
/** The longest note read back (queue-status): a note is one line we wrote. */
const NOTE_MAX = 4096;

/** A refused packet, as refused/ holds it. */
export interface RefusedPacket {
  /** File name inside refused/. */
  filename: string;
  /** The note: when, which number it claimed, and why (empty if it has none). */
  why: string;
}

/** A name in refused/ not taken yet: the job's own, or with a counter after it. */
function freeName(dir: string, filename: string): string {
  for (let n = 0; ; n++) {
    const name = n === 0 ? filename : `${filename}.${n}`;
    if (!fs.existsSync(path.join(dir, name)) && !fs.existsSync(path.join(dir, name + NOTE_SUFFIX))) return name;
  }
}

/**
 * Move jobs/`filename` of the queue at `queueDir` to refused/ (named `as` there, or with a counter
 * after it if that is taken), with `why` in its note. Returns the name it has there; undefined if
 * it was gone already (another processor refused it first).
 */
export function refuseJobFile(queueDir: string, filename: string, why: string, as = filename): string | undefined {
  const jobs = path.join(queueDir, 'jobs');
  const dir = path.join(queueDir, REFUSED_DIR);
  makeDir(dir);
  if (finishCutMove(jobs, dir, filename, as)) return as;
  const name = freeName(dir, as);
  // The note's bytes are durable by writeFresh's fsync; its name with the packet's, below.
  writeFresh(path.join(dir, name + NOTE_SUFFIX), `${new Date().toISOString()} ${why}\n`, 0o644, { fsync: true });
  try {
    // The packet's bytes were made durable by whoever stored it; rename moves the name, follows no link.
    fs.renameSync(path.join(jobs, filename), path.join(dir, name));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    fs.rmSync(path.join(dir, name + NOTE_SUFFIX), { force: true }); // a stray note is harmless: not fsynced
    return undefined;
  }
  fsyncDir(dir); // the note and the packet are in refused/ to stay
  fsyncDir(jobs); // the packet is gone from jobs/ to stay
  return name;
}

/**
 * A move that a power cut left with both names (refused/ fsynced, jobs/ not yet, as POSIX allows):
 * the same file in both places. The name in jobs/ goes, durably; no second copy is made.
 */
function finishCutMove(jobs: string, dir: string, filename: string, as: string): boolean {
  if (!sameFile(path.join(jobs, filename), path.join(dir, as))) return false;
  fs.unlinkSync(path.join(jobs, filename));
  fsyncDir(jobs); // gone from jobs/ to stay; refused/ held it durably already
  return true;
}

/** Whether two names are one regular file (lstat: neither name is followed). */
function sameFile(a: string, b: string): boolean {
  try {
    const x = fs.lstatSync(a, { bigint: true });
    const y = fs.lstatSync(b, { bigint: true });
    return x.ino === y.ino && x.dev === y.dev && x.isFile();
  } catch {
    return false;
  }
}

/**
 * Finish every move to refused/ that a power cut left with both names, at a run's first lock:
 * a scan never reads such a file (two names: a hard link, refused as untrusted.ts says), so no
 * later refusal of it would. Returns how many names left jobs/ (one fsync of jobs/ for them all).
 */
export function finishCutRefusals(queueDir: string): number {
  const dir = path.join(queueDir, REFUSED_DIR);
  // No refused/ (nothing was ever refused here) is the common case: asked without an exception.
  if (fs.lstatSync(dir, { throwIfNoEntry: false }) === undefined) return 0;
  const jobs = path.join(queueDir, 'jobs');
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0; // gone since, or not to be read: nothing to finish
  }
  let removed = 0;
  for (const name of names) {
    if (name.endsWith(NOTE_SUFFIX) || !sameFile(path.join(jobs, name), path.join(dir, name))) continue;
    fs.unlinkSync(path.join(jobs, name));
    removed++;
  }
  if (removed > 0) fsyncDir(jobs); // gone from jobs/ to stay; refused/ held them durably already
  return removed;
}

/** refused/, made if missing (and the queue directory fsynced, so that refused/ itself survives a power cut). */
function makeDir(dir: string): void {
  try {
    fs.mkdirSync(dir, 0o755);
    fsyncDir(path.dirname(dir));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** The packets in refused/, by name, with their notes; none if there is no refused/. */
export function listRefused(queueDir: string): RefusedPacket[] {
  const dir = path.join(queueDir, REFUSED_DIR);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => !n.endsWith(NOTE_SUFFIX))
    .sort()
    .map((filename) => ({ filename, why: readNote(path.join(dir, filename + NOTE_SUFFIX)) }));
}

function readNote(file: string): string {
  try {
    const { fd } = openExisting(file);
    try {
      const buf = Buffer.alloc(NOTE_MAX);
      const n = fs.readSync(fd, buf, 0, NOTE_MAX, 0);
      return buf.subarray(0, n).toString('utf8').split('\n')[0]!;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}
