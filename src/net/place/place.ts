/**
 * A place: a Filespooler queue directory, plus the writers' sequence file beside it.
 *
 *   DIR/nextseq, DIR/nextseq.lock, DIR/jobs/   the queue, as `fspl queue-init` makes it
 *   DIR/sendseq, DIR/sendseq.lock              the numbers of tokens put into the place by the
 *                                              net (its transitions and `net put`); a sender
 *                                              may use it as its `prepare -s` seqfile too
 *
 * Tokens are packets (token.ts), indexed as the place is scanned (token-index.ts); their payloads
 * are read and sealed in payload.ts.
 *
 * Writing a token never shows a partial file and never leaves a hole in the numbering that a
 * sequence-ordered reader would wait on forever: under the sendseq lock the packet is written
 * under a temporary name (net-*.part, which no Filespooler reader looks at), fsynced, the next
 * number stored, and only then the packet renamed to its final fspl-*.fspl name. A crash after
 * the number is stored and before the rename leaves a .part file holding a number nobody else
 * has; recovery (`repairPart`) turns it into a NOP token, which readers skip, so the numbering
 * has no hole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { v4 as uuidv4 } from 'uuid';
import type { PacketHeader } from '../../packet/index.js';
import { makeHeader, packetBytes, writePacketSync } from '../../packet/prepare.js';
import { readHeaderFileSync } from '../../queue/job-headers.js';
import { isJobFilename } from '../../queue/jobs.js';
import { Queue } from '../../queue/queue.js';
import { fsyncDir, mkdirDurable } from '../../sys/durable.js';
import { type BatchOp, firstFailure, runBatch } from '../../sys/fs-batch.js';
import { closeQuietly, forEachDirName, fsyncSync, unlinkQuietly, writeAllSync } from '../../sys/io.js';
import { SeqFile } from '../../sys/seqfile.js';
import { CREATE_NEW, openExisting } from '../../sys/untrusted.js';
import type { PlaceOrder, PlaceSpec } from '../model/model.js';
import { copyPayloads } from './payload.js';
import { publishDurably } from './publish-token.js';
import { sealAndSign } from './signatures.js';
import { isPartName, nameOrder, numberedName, orderKey, type TokenContent } from './token.js';
import { TokenIndex } from './token-index.js';

export { publish, publishDurably, published } from './publish-token.js';

/** How a part is created: never over another file. */
export const PART_FLAGS = CREATE_NEW;

/** A token written under a temporary name, to be renamed to its final name (publish). */
export interface StagedFile {
  seq: bigint;
  temp: string;
  final: string;
  header: PacketHeader;
}

/** A place: its queue directory, the writers' sequence file beside it, and the index of its tokens. */
export class Place extends TokenIndex {
  readonly spec: PlaceSpec;
  readonly queue: Queue;
  readonly order: PlaceOrder;
  readonly sendseqPath: string;
  /** Sign what is put here with this key (`net put --sign`), as an outbox signs with its host's. */
  signKey: string | undefined;

  constructor(spec: PlaceSpec, order: PlaceOrder) {
    super();
    this.spec = spec;
    this.order = order;
    this.queue = new Queue(spec.dir);
    this.sendseqPath = path.join(spec.dir, 'sendseq');
  }

  get name(): string {
    return this.spec.name;
  }

  exists(): boolean {
    try {
      return fs.statSync(this.queue.jobsDir).isDirectory();
    } catch {
      return false;
    }
  }

  /**
   * Create the queue (and its sendseq) if missing; an existing queue is left as it is. Its sendseq,
   * if missing, comes with its first writer (lockWriters, or the reference's `prepare -s`, which
   * make it holding 1): a net run over existing queues that it only reads made a seqfile in each,
   * two fsyncs each, for nothing.
   */
  init(): void {
    const made = !this.exists();
    // Durable (the new directories and, by SeqFile.write, the seqfiles): a place that init made
    // is there after a power cut, so no token written into it is lost with its directory.
    mkdirDurable(this.queue.jobsDir);
    if (!fs.existsSync(this.queue.seqfilePath)) SeqFile.with(this.queue.seqfilePath, { create: true }, () => {});
    if (made) SeqFile.with(this.sendseqPath, { create: true }, () => {});
  }

  /** Lock the writers' seqfile. Fails at once (LockedError) if another writer holds it. */
  lockWriters(): SeqFile {
    return SeqFile.lock(this.sendseqPath, { create: true });
  }

  /**
   * Write a token under a temporary name with the next number, fsync it, and store the number
   * after it. The caller holds the writers' lock and later renames temp to final (publish).
   */
  stage(writers: SeqFile, content: TokenContent, tag: string): StagedFile {
    const s = this.writePart(writers.read(), content, tag);
    try {
      fsyncSync(s.fd); // its bytes are durable...
      fs.closeSync(s.fd);
      // ...and its name: once the number is stored as taken (next line), recovery must find this
      // file to publish it or turn it into a NOP; without it the numbering would have a hole that
      // a sequence-ordered reader waits on forever.
      fsyncDir(this.queue.jobsDir);
    } catch (err) {
      closeQuietly(s.fd);
      unlinkQuietly(s.temp);
      throw err;
    }
    try {
      writers.write(s.seq + 1n); // durable (SeqFile.write): after a power cut this number is not handed out again
    } catch (err) {
      // A full disk (sendseq.temp not written) or an I/O error: the part goes, or, if its number
      // was stored after all (the rename done, its directory's fsync failed), becomes a NOP. If
      // even that fails, it stays, holding its number, for the next run's recovery.
      try {
        this.repairPart(writers, s.temp, readNextQuietly(this));
      } catch {
        // left for recovery
      }
      throw err;
    }
    return s;
  }

  /**
   * Write a token numbered seq under a temporary name (net-*.part), and leave it open, neither
   * fsynced nor its number stored: the caller (a group commit, or stage) does both, in that order.
   * On failure nothing is left.
   */
  writePart(seq: bigint, content: TokenContent, tag: string): StagedFile & { fd: number } {
    const s = this.planPart(seq, content, tag);
    return this.fillPart(s, content, fs.openSync(s.temp, PART_FLAGS, 0o644));
  }

  /**
   * A part's names and header, before it is created (PART_FLAGS, mode 0o644; on the pool, as a create
   * may wait for ext4's journal) and filled (fillPart).
   */
  planPart(seq: bigint, content: TokenContent, tag: string): StagedFile {
    const id = uuidv4();
    const temp = this.queue.jobPath(`net-${tag}-${id}.part`);
    const final = this.queue.jobPath(numberedName(seq, id));
    const header =
      content.kind === 'NOP'
        ? makeHeader({ seq, cmd: { kind: 'NOP' } })
        : makeHeader({ seq, cmd: { kind: 'Command', params: content.params ?? [], env: content.env ?? [] } });
    // Tokens bound for another host (an outbox) are sealed: their length and CRC-32 go in the
    // header, so that a transfer cut or damaged on the way is refused, never committed; and
    // signed with this host's key, if it has one (signatures.ts), or with `net put --sign`'s.
    const sealed = this.spec.remote !== undefined || this.signKey !== undefined;
    return {
      seq,
      temp,
      final,
      header: sealed ? sealAndSign(header, content.payload, this.signKey ?? this.spec.remote?.key) : header,
    };
  }

  /**
   * The part as one operation of a batch (fs-batch.ts: created, written, fsynced and closed on a
   * pool thread), for a payload in memory or in a file of its own (a function's returned bytes, a
   * command's output) or none; undefined for the payloads of input tokens or a descriptor, which
   * fillPart copies on the event loop. Its name is durable only with an fsyncDir of jobs/ after.
   */
  partOp(s: StagedFile, content: TokenContent): BatchOp | undefined {
    const p = content.payload;
    const at = { path: s.temp, flags: PART_FLAGS, mode: 0o644, must: true };
    if (!p) return { op: 'writeFile', ...at, data: packetBytes(s.header) };
    if ('data' in p) return { op: 'writeFile', ...at, data: packetBytes(s.header, p.data) };
    if ('path' in p) return { op: 'writeFileFrom', ...at, data: packetBytes(s.header), from: p.path };
    return undefined;
  }

  /** Write the packet into the part just created (into the page cache); on failure it goes. */
  fillPart(s: StagedFile, content: TokenContent, out: number): StagedFile & { fd: number } {
    try {
      const p = content.payload;
      if (p && 'data' in p) {
        writeAllSync(out, packetBytes(s.header, p.data));
      } else if (p && 'tokens' in p) {
        writePacketSync(out, s.header);
        copyPayloads(p.tokens, out);
      } else if (p && 'path' in p) {
        // A staged output: not through a link, and only a regular file (untrusted.ts).
        const inFd = openExisting(p.path).fd;
        try {
          writePacketSync(out, s.header, inFd);
        } finally {
          closeQuietly(inFd);
        }
      } else {
        writePacketSync(out, s.header, p?.fd);
      }
    } catch (err) {
      closeQuietly(out);
      unlinkQuietly(s.temp);
      throw err;
    }
    return { ...s, fd: out };
  }

  /** Put one token into the place now, whatever its capacity. */
  putNow(content: TokenContent): { seq: bigint; filename: string } {
    return this.putIfRoom(content, undefined) as { seq: bigint; filename: string };
  }

  /**
   * Tokens in the place as its capacity counts them: job files plus tokens being written
   * (net-*.part). Read from the directory, so it sees every writer; call it holding the
   * writers' lock for an answer that stays true until the lock is released.
   */
  occupancy(): number {
    let n = 0;
    forEachDirName(this.queue.jobsDir, (name) => {
      if (isJobFilename(name) || isPartName(name)) n++;
    });
    return n;
  }

  /** putNow, unless the place holds `capacity` tokens or more: then 'full', and nothing is written. */
  putIfRoom(content: TokenContent, capacity: number | undefined): { seq: bigint; filename: string } | 'full' {
    const writers = this.lockWriters();
    try {
      if (capacity !== undefined && this.occupancy() >= capacity) return 'full';
      const s = this.stage(writers, content, 'put');
      try {
        publishDurably(s.temp, s.final);
      } catch (err) {
        // Not renamed (an I/O error): its number is stored, so the part becomes a NOP (or stays
        // for recovery). Renamed, and its directory's fsync failed: the token is there, not known
        // to be durable, and the error is said.
        if (fs.existsSync(s.temp)) {
          try {
            this.repairPart(writers, s.temp, readNextQuietly(this));
          } catch {
            // left for recovery
          }
        }
        throw err;
      }
      return { seq: s.seq, filename: path.basename(s.final) };
    } finally {
      writers.release();
    }
  }

  /** The consumer's next sequence number (nextseq). */
  readNext(): bigint {
    return this.queue.getNext();
  }

  /**
   * A .part file left by a writer that died (the caller holds the writers' lock, so no live
   * writer owns it). If its number was stored as taken and no token holds it yet, it becomes a
   * NOP token so that the numbering has no hole; otherwise it is removed.
   */
  repairPart(writers: SeqFile, partPath: string, consumerNext: bigint | undefined): 'nop' | 'removed' {
    let header: PacketHeader | undefined;
    try {
      header = readHeaderFileSync(partPath);
    } catch {
      header = undefined; // cut short before its header was complete: the number was never stored
    }
    const taken = header !== undefined && writers.read() > header.seq;
    const held = header !== undefined && this.holds(header.seq);
    const wanted =
      header !== undefined && this.order === 'sequence' && (consumerNext === undefined || header.seq >= consumerNext);
    if (header && taken && !held && wanted) {
      // The number is stored in the live sendseq, but maybe not durably: its rename's directory
      // fsync may be what failed. Stored anew (a new rename, not a retried fsync) before the NOP
      // holds the number, or a power cut could take sendseq back and hand the number out again.
      writers.write(writers.read());
      const id = uuidv4();
      const temp = this.queue.jobPath(`net-nop-${id}.part`);
      const fd = fs.openSync(temp, PART_FLAGS, 0o644); // a new name: never a link planted in jobs/
      try {
        const nop = makeHeader({ seq: header.seq, cmd: { kind: 'NOP' } });
        writePacketSync(fd, this.spec.remote !== undefined ? sealAndSign(nop, undefined, this.spec.remote.key) : nop);
        fsyncSync(fd);
      } catch (err) {
        // A full disk: the part stays, holding its number, for the caller to try again.
        unlinkQuietly(temp);
        throw err;
      } finally {
        closeQuietly(fd);
      }
      publishDurably(temp, this.queue.jobPath(numberedName(header.seq, id)));
      unlinkQuietly(partPath); // not made durable: should it come back, the NOP now holds its number and it is removed
      return 'nop';
    }
    unlinkQuietly(partPath);
    return 'removed';
  }

  /** Whether a job file in jobs/ has this number (read from the disk, not the last scan). */
  holds(seq: bigint): boolean {
    let found = false;
    this.queue.forEachJobFile((name) => {
      if (found) return;
      try {
        // A numbered name is taken at its word when it says no (net writers name tokens so); the header confirms a yes.
        const o = nameOrder(name);
        if (o !== undefined && o !== orderKey(seq)) return;
        if (readHeaderFileSync(this.queue.jobPath(name)).seq === seq) found = true;
      } catch {
        // not a readable job: holds nothing
      }
    });
    return found;
  }

  /** Temporary files of net writers in jobs/. */
  partFiles(): string[] {
    const parts: string[] = [];
    try {
      forEachDirName(this.queue.jobsDir, (name) => {
        if (isPartName(name)) parts.push(this.queue.jobPath(name));
      });
    } catch {
      return [];
    }
    return parts;
  }
}

/**
 * Create the planned parts (one batch) and fill them (on the event loop, into the page cache).
 * All or nothing: on a failure, those made are closed and removed, and the error thrown.
 * Nothing here is durable yet: the commit's step 1 (commit.ts) fsyncs each part and its jobs/
 * before any of their numbers is stored. The removals need no fsync: a part that comes back after
 * a power cut has no stored number, and recovery removes it (repairPart).
 */
export async function createParts(
  planned: Array<{ p: Place; content: TokenContent; part: StagedFile }>,
): Promise<Array<StagedFile & { fd: number }>> {
  const opens = planned.map((x): BatchOp => ({ op: 'open', path: x.part.temp, flags: PART_FLAGS, mode: 0o644 }));
  const fds = await runBatch(opens);
  const files: Array<StagedFile & { fd: number }> = [];
  let failure: unknown = firstFailure(opens, fds);
  planned.forEach((x, n) => {
    const fd = fds[n]!;
    if (fd < 0) return;
    if (failure !== undefined) {
      closeQuietly(fd);
      unlinkQuietly(x.part.temp);
      return;
    }
    try {
      files.push(x.p.fillPart(x.part, x.content, fd)); // on failure it closes and removes its part
    } catch (err) {
      failure = err;
    }
  });
  if (failure === undefined) return files;
  for (const f of files) {
    closeQuietly(f.fd);
    unlinkQuietly(f.temp);
  }
  throw failure;
}

function readNextQuietly(p: Place): bigint | undefined {
  try {
    return p.readNext();
  } catch {
    return undefined;
  }
}
