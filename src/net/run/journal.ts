/**
 * The runner's journal (Perpetuum's idea): an append-only file of JSON lines recording each
 * commit before it is carried out, and its end once it is. A commit record names everything the
 * commit will do (packets to rename into places, input tokens to consume), and every step is
 * idempotent, so after a crash at any instant the runner redoes the commits that have no end
 * record and the net is as if each had completed exactly once.
 *
 * Records are written with one write(2) each and fsynced. A torn last line (a crash during the
 * write) is ignored: its commit had not happened yet, since nothing is done before the fsync.
 *
 * A power cut keeps only what was fsynced (src/durable.ts), so the journal itself is made durable
 * when opened (the file's name, by an fsync of its directory), and the runner makes each step of
 * a commit durable before the next depends on it (runner.ts, `commit`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDir } from '../../durable.js';
import { closeQuietly, fsyncSync, writeAllSync } from '../../io.js';

/** A packet staged under a temporary name in a place's jobs/, to be renamed to its final name. */
export interface StagedOutput {
  place: string;
  seq: bigint;
  /** Absolute paths. */
  temp: string;
  final: string;
}

/** An input token to consume: the file is deleted, and a sequence-ordered place's nextseq moved past it. */
export interface ConsumedInput {
  place: string;
  seq: bigint;
  /** Absolute path of the job file. */
  file: string;
  sequence: boolean;
}

export interface CommitRecord {
  firing: string;
  transition: string;
  outputs: StagedOutput[];
  inputs: ConsumedInput[];
}

type Line = { t: 'commit'; c: CommitRecord } | { t: 'done'; f: string };

const COMPACT_BYTES = 256 * 1024;

export class Journal {
  readonly path: string;
  private fd: number;
  private size: number;

  constructor(file: string) {
    this.path = file;
    this.fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT, 0o644);
    this.size = fs.fstatSync(this.fd).size;
    // The journal's name is durable before any commit is recorded in it: otherwise a power cut
    // takes the whole file, fsynced records and all, and recovery finds no commit to finish.
    fsyncDir(path.dirname(file));
  }

  /** The commits recorded and not ended, in journal order. */
  static pending(file: string): CommitRecord[] {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const open = new Map<string, CommitRecord>();
    for (const line of text.split('\n')) {
      if (!line) continue;
      let rec: Line;
      try {
        rec = JSON.parse(line, reviveBigints) as Line;
      } catch {
        continue; // a torn last line
      }
      if (rec.t === 'commit') open.set(rec.c.firing, rec.c);
      else if (rec.t === 'done') open.delete(rec.f);
    }
    return [...open.values()];
  }

  private append(rec: Line, sync: boolean): void {
    const line = `${JSON.stringify(rec, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}\n`;
    // Written as a string: a Buffer per record would come from Node's shared pool, whose 8 KiB
    // slabs live long enough to be collected only by full GCs, and a long run's RSS would grow.
    const length = Buffer.byteLength(line);
    const n = fs.writeSync(this.fd, line);
    if (n < length) writeAllSync(this.fd, Buffer.from(line).subarray(n));
    if (sync) fsyncSync(this.fd);
    this.size += length;
  }

  /** Record a commit, durably: nothing of it is done before this returns. */
  commit(c: CommitRecord): void {
    this.append({ t: 'commit', c }, true);
  }

  /**
   * The commit is fully carried out. With no commit open (the runner makes one commit at a time),
   * a journal past its size limit starts again empty.
   */
  done(firing: string): void {
    // Not fsynced, and it needs none: the runner calls this only once every step of the commit is
    // durable, so should a power cut lose the record, recovery redoes a commit that is complete,
    // and each of its steps is idempotent (a renamed output already there, or since consumed, is
    // left alone). The next commit record's fsync makes it durable anyway. A truncation (below)
    // is fsynced, and comes only once every commit recorded is complete and durable.
    this.append({ t: 'done', f: firing }, false);
    if (this.size > COMPACT_BYTES) this.truncate();
  }

  /** Empty the journal: only when no commit is open. */
  truncate(): void {
    fs.ftruncateSync(this.fd, 0);
    fsyncSync(this.fd);
    this.size = 0;
  }

  close(): void {
    closeQuietly(this.fd);
    this.fd = -1;
  }
}

function reviveBigints(_k: string, v: unknown): unknown {
  return typeof v === 'string' && /^\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v;
}
