/**
 * A place: a Filespooler queue directory, plus the writers' sequence file beside it.
 *
 *   DIR/nextseq, DIR/nextseq.lock, DIR/jobs/   the queue, as `fspl queue-init` makes it
 *   DIR/sendseq, DIR/sendseq.lock              the numbers of tokens put into the place by the
 *                                              net (its transitions and `net put`); a sender
 *                                              may use it as its `prepare -s` seqfile too
 *
 * Tokens are packets; their correlation key is the packet variable KEY (FSPL_SET_KEY).
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
import { copy } from '../../copy.js';
import { fsyncDir, mkdirDurable } from '../../durable.js';
import { NetError } from '../../errors.js';
import { closeQuietly, forEachDirEntry, fsyncSync, unlinkQuietly } from '../../io.js';
import { crc32Update, readHeaderSync, type PacketHeader, type Seal } from '../../packet/index.js';
import { fdOffset } from '../../packet/sealed-copy.js';
import { makeHeader, writePacketSync } from '../../prepare.js';
import { isJobFilename } from '../../jobs.js';
import { Queue, readHeaderFileSync } from '../../queue.js';
import { SeqFile } from '../../seqfile.js';
import type { PlaceOrder, PlaceSpec } from '../model/model.js';

export const KEY_VAR = 'KEY';

/** A token waiting in a place. */
export interface Token {
  place: string;
  filename: string;
  /** Absolute path of the job file. */
  path: string;
  seq: bigint;
  /** The correlation key: the packet's KEY variable, or PLACE-SEQ for a token that came without. */
  key: string;
  header: PacketHeader;
  /** When this runner first saw it (ms since the epoch). */
  seen: number;
}

export function tokenKey(place: string, header: PacketHeader): string {
  if (header.cmd.kind === 'Command') {
    for (const [k, v] of header.cmd.env) if (Buffer.from(k).toString() === KEY_VAR) return Buffer.from(v).toString();
  }
  return `${place}-${header.seq}`;
}

/** What a new token carries: its kind, key, variables and params. */
export interface TokenContent {
  kind?: 'Command' | 'NOP';
  /** Variables without the FSPL_SET_ prefix; KEY among them. */
  env?: Array<[Uint8Array, Uint8Array]>;
  params?: Uint8Array[];
  /**
   * Where the payload comes from: a file, the payloads of tokens (one after the other), a
   * descriptor (read from its position), or none.
   */
  payload?: { path: string } | { tokens: string[] } | { fd: number };
}

/**
 * A token as the place index keeps it. Its header may be dropped to save memory while the token
 * is far from the head of the place (see Place.keepHeaders); reading `header` then reads it from
 * the file again.
 */
class IndexedToken implements Token {
  readonly place: string;
  readonly filename: string;
  readonly seq: bigint;
  /** seq as orderKey() writes it. */
  readonly order: string;
  readonly key: string;
  readonly seen: number;
  readonly nop: boolean;
  private readonly jobsDir: string;
  private kept: PacketHeader | undefined;

  constructor(place: string, jobsDir: string, filename: string, header: PacketHeader, seen: number) {
    this.place = place;
    this.jobsDir = jobsDir;
    this.filename = filename;
    this.seq = header.seq;
    this.order = orderKey(header.seq);
    this.key = tokenKey(place, header);
    this.seen = seen;
    this.nop = header.cmd.kind === 'NOP';
    this.kept = header;
  }

  get path(): string {
    return `${this.jobsDir}/${this.filename}`;
  }

  get header(): PacketHeader {
    this.kept ??= readHeaderFileSync(this.path);
    return this.kept;
  }

  dropHeader(): void {
    this.kept = undefined;
  }
}

/** Whether a token is a NOP (known without its header for indexed tokens). */
export function isNop(t: Token): boolean {
  return t instanceof IndexedToken ? t.nop : t.header.cmd.kind === 'NOP';
}

/** Headers read per batch during a scan: bounds the memory a scan of a big place needs at once. */
const SCAN_CHUNK = 2048;

/**
 * How many tokens of a place a reader indexes at most (Place.window): those with the lowest
 * numbers. Refilling it costs a scan of the directory, once three quarters have been consumed:
 * 16,384 tokens take about 5 MiB, and a place of 100,000 is scanned about 8 times.
 */
export const INDEX_WINDOW = 16384;

/** Tokens below a place's next number indexed at most, with a window (see Place.floor): 64, or a quarter of a small window. */
const BELOW_FLOOR_INDEXED = 64;

/** A sequence number as a string that sorts as the number does (a u64 has at most 20 digits). */
export function orderKey(seq: bigint): string {
  return seq.toString().padStart(20, '0');
}

/**
 * The name a net writer gives a token: fspl-NUMBER-UUID.fspl, NUMBER its sequence number as
 * orderKey() writes it. To any Filespooler reader it is a job file like another (fspl-*.fspl);
 * to a reader of the place, a directory listing tells where each token stands in the order
 * without opening it, which is what lets a reader index only the lowest numbers of a place that
 * holds many tokens. Files named otherwise (fspl-UUID.fspl, from queue-write) have their header
 * read once; a name whose number is not its header's is found out when it is read, and from
 * then on placed by its header.
 */
export function numberedName(seq: bigint, id: string = uuidv4()): string {
  return `fspl-${orderKey(seq)}-${id}.fspl`;
}

const NUMBERED = /^fspl-\d{20}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.fspl$/;

/** The order key a numbered name carries. */
function nameOrder(name: string): string | undefined {
  return name.length === 67 && NUMBERED.test(name) ? name.slice(5, 25) : undefined;
}

/**
 * The `limit` lowest (order key, name) pairs offered: a max-heap, so that a pair beyond them costs
 * one comparison. Hand-written: a scan offers every file of the place, and no library heap keeps
 * two parallel string arrays without an object per entry.
 */
class Lowest {
  readonly keys: string[] = [];
  readonly names: string[] = [];
  /** Pairs offered and left out. */
  rejected = 0;
  constructor(private readonly limit: number) {}

  private above(i: number, j: number): boolean {
    const a = this.keys[i]!;
    const b = this.keys[j]!;
    return a > b || (a === b && this.names[i]! > this.names[j]!);
  }

  private swap(i: number, j: number): void {
    const k = this.keys[i]!;
    this.keys[i] = this.keys[j]!;
    this.keys[j] = k;
    const n = this.names[i]!;
    this.names[i] = this.names[j]!;
    this.names[j] = n;
  }

  offer(key: string, name: string): void {
    const n = this.keys.length;
    if (this.limit === Infinity) {
      this.keys.push(key);
      this.names.push(name);
      return;
    }
    if (n < this.limit) {
      this.keys.push(key);
      this.names.push(name);
      for (let i = n; i > 0; ) {
        const up = (i - 1) >> 1;
        if (!this.above(i, up)) break;
        this.swap(i, up);
        i = up;
      }
      return;
    }
    this.rejected++;
    const top = this.keys[0]!;
    if (key > top || (key === top && name >= this.names[0]!)) return;
    this.keys[0] = key;
    this.names[0] = name;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.above(l, m)) m = l;
      if (r < n && this.above(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
  }
}

export class Place {
  readonly spec: PlaceSpec;
  readonly queue: Queue;
  readonly order: PlaceOrder;
  readonly sendseqPath: string;
  /**
   * The tokens indexed, by file name, as last scanned (plus the ones this process wrote since):
   * every token of the place, or the `window` lowest numbers of it.
   */
  tokens = new Map<string, Token>();
  /** Job files in the place, indexed or not, as last scanned (plus own writes, minus own consumes). */
  count = 0;
  /**
   * How many tokens are indexed at most: the runner sets it for the places it reads, and-merge
   * inputs aside (INDEX_WINDOW or more), so that its memory does not grow with the tokens waiting. Those
   * beyond are counted, not indexed; a scan brings them in as the indexed ones are consumed.
   * Infinity (the default): every token (and-merge inputs are looked up by key).
   */
  window = Infinity;
  /**
   * How many tokens from the head of the place keep their header in memory (the runner sets it
   * to what its readers may look at); the others keep only their name, number and key.
   * Infinity: all.
   */
  keepHeaders = Infinity;
  /**
   * The consumer's next number, for a place read in sequence (the runner sets it): tokens below
   * it are never consumed (late copies, duplicates), so with a window only a few of them are
   * indexed, enough to report them, and they can't crowd out the tokens that are.
   */
  floor: bigint | undefined;
  /** Whether `tokens` holds every token of the place; if not, all those left out number above `top`. */
  private complete = true;
  /** The highest order key indexed (a bound: it may have been consumed since). */
  private top = '';
  /** Order keys of job files whose name does not tell their number (read from their header once). */
  private foreign = new Map<string, string>();
  /** Tokens by sequence number (lazily sorted; may hold tokens gone since, skipped when read). */
  private bySeq: Token[] = [];
  private sorted = true;
  /** bySeq before this index holds only tokens gone since. */
  private head = 0;
  /** Set when the directory must be read again (an event, a poll); own writes don't set it. */
  dirty = true;

  constructor(spec: PlaceSpec, order: PlaceOrder) {
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

  /** Create the queue (and sendseq) if missing; an existing queue is left as it is. */
  init(): void {
    // Durable (the new directories and, by SeqFile.write, the seqfiles): a place that init made
    // is there after a power cut, so no token written into it is lost with its directory.
    mkdirDurable(this.queue.jobsDir);
    if (!fs.existsSync(this.queue.seqfilePath)) SeqFile.with(this.queue.seqfilePath, { create: true }, () => {});
    if (!fs.existsSync(this.sendseqPath)) SeqFile.with(this.sendseqPath, { create: true }, () => {});
  }

  /**
   * Scan again: index the tokens with the lowest numbers (all of them, with no window), reading
   * only the headers of files not seen before; returns the tokens newly indexed. The directory is
   * read as a stream and only the window is kept, so the memory a scan needs does not grow with
   * the number of files either.
   */
  async refresh(now: number): Promise<Token[]> {
    this.dirty = false;
    const lowest = new Lowest(this.window);
    const foreign = new Map<string, string>();
    const unread: string[] = [];
    let count = 0;
    const floorKey = this.window !== Infinity && this.floor !== undefined ? orderKey(this.floor) : undefined;
    let below = 0;
    const belowMax = Math.min(BELOW_FLOOR_INDEXED, Math.floor(this.window / 4));
    const offer = (key: string, name: string): void => {
      // Left out for good (not "beyond the window": no scan is due for them).
      if (floorKey !== undefined && key < floorKey && ++below > belowMax) return;
      lowest.offer(key, name);
    };
    this.queue.forEachJobFile((name) => {
      count++;
      let key = this.foreign.get(name);
      if (key !== undefined) foreign.set(name, key);
      else key = (this.tokens.get(name) as IndexedToken | undefined)?.order ?? nameOrder(name);
      if (key === undefined) unread.push(name);
      else offer(key, name);
    });
    // Files named without their number: their headers tell it (kept for the ones indexed below).
    const read = new Map<string, PacketHeader>();
    for (let i = 0; i < unread.length; i += SCAN_CHUNK) {
      const chunk = unread.slice(i, i + SCAN_CHUNK);
      const entries = await this.queue.readJobHeaders(chunk);
      count -= chunk.length - entries.length; // unreadable: not tokens
      for (const e of entries) {
        const key = orderKey(e.header.seq);
        foreign.set(e.filename, key);
        read.set(e.filename, e.header);
        offer(key, e.filename);
      }
      // Only what can still be in the window needs its header kept.
      if (lowest.keys.length >= this.window) for (const e of entries) if (lowest.keys[0]! < foreign.get(e.filename)!) read.delete(e.filename);
    }
    this.foreign = foreign;
    const next = new Map<string, Token>();
    const fresh: Token[] = [];
    const toRead: string[] = [];
    let top = '';
    for (let i = 0; i < lowest.names.length; i++) {
      const name = lowest.names[i]!;
      if (lowest.keys[i]! > top) top = lowest.keys[i]!;
      const t = this.tokens.get(name);
      const h = read.get(name);
      if (t) next.set(name, t);
      else if (h) fresh.push(this.makeToken(name, h, now));
      else toRead.push(name);
    }
    for (let i = 0; i < toRead.length; i += SCAN_CHUNK) {
      const chunk = toRead.slice(i, i + SCAN_CHUNK);
      const entries = await this.queue.readJobHeaders(chunk);
      count -= chunk.length - entries.length;
      for (const e of entries) {
        const t = this.makeToken(e.filename, e.header, now) as IndexedToken;
        if (t.order !== nameOrder(e.filename)) {
          // Named with a number that is not its own: placed by its header from now on.
          this.foreign.set(e.filename, t.order);
          this.dirty = true;
        }
        fresh.push(t);
      }
    }
    this.count = count;
    this.complete = lowest.rejected === 0;
    this.top = top;
    // Headers within keepHeaders of the lowest number stay in memory; the others are read again when needed.
    let floor: bigint | undefined;
    for (const t of next.values()) if (floor === undefined || t.seq < floor) floor = t.seq;
    for (const t of fresh) if (floor === undefined || t.seq < floor) floor = t.seq;
    if (this.keepHeaders !== Infinity && floor !== undefined) {
      const horizon = floor + BigInt(this.keepHeaders);
      for (const t of fresh) if (t.seq >= horizon) (t as IndexedToken).dropHeader();
    }
    for (const t of fresh) next.set(t.filename, t);
    this.tokens = next;
    for (const t of fresh) this.index(t);
    if (this.bySeq.length > 2 * this.tokens.size + 64) this.compact();
    return fresh;
  }

  /** Forget everything indexed (the place can't be read). */
  clear(): void {
    this.tokens.clear();
    this.foreign.clear();
    this.count = 0;
    this.complete = true;
    this.top = '';
  }

  private makeToken(filename: string, header: PacketHeader, now: number): Token {
    return new IndexedToken(this.name, this.queue.jobsDir, filename, header, now);
  }

  private index(t: Token): void {
    const last = this.bySeq[this.bySeq.length - 1];
    if (last && last.seq > t.seq) this.sorted = false;
    this.bySeq.push(t);
  }

  private compact(): void {
    this.bySeq = this.bySeq.filter((t) => this.tokens.get(t.filename) === t);
    this.head = 0;
  }

  /** A token this process has just written into the place (no need to read the directory for it). */
  adopt(filename: string, header: PacketHeader, now: number): void {
    this.count++;
    const key = orderKey(header.seq);
    if (this.complete ? this.tokens.size >= this.window : key > this.top) {
      // Beyond the window: a later scan indexes it, when its turn comes.
      this.complete = false;
      return;
    }
    if (key > this.top) this.top = key;
    const t = this.makeToken(filename, header, now);
    this.tokens.set(filename, t);
    this.index(t);
  }

  /** Forget a token this runner consumed (its file is gone or going). */
  forget(filename: string): void {
    if (this.tokens.delete(filename)) this.count = Math.max(0, this.count - 1);
    // Most of the window consumed, and tokens beyond it: time to scan for them.
    if (!this.complete && this.tokens.size <= this.window / 4) this.dirty = true;
  }

  /** The tokens present, by sequence number, skipping those `skip` says (claimed ones); at most `limit`. */
  inOrder(limit: number, skip: (t: Token) => boolean): Token[] {
    if (!this.sorted) {
      this.compact();
      this.bySeq.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
      this.sorted = true;
    }
    // Consumed tokens collect at the front: step past them for good (head), so that a reader
    // taking tokens one by one does not rescan them at every decision; compact now and then.
    while (this.head < this.bySeq.length && this.tokens.get(this.bySeq[this.head]!.filename) !== this.bySeq[this.head]) this.head++;
    if (this.head > 1024 && this.head > this.bySeq.length / 2) {
      this.bySeq = this.bySeq.slice(this.head);
      this.head = 0;
    }
    const out: Token[] = [];
    let gone = 0;
    for (let i = this.head; i < this.bySeq.length; i++) {
      const t = this.bySeq[i]!;
      if (this.tokens.get(t.filename) !== t) {
        gone++;
        continue;
      }
      if (skip(t)) continue;
      out.push(t);
      if (out.length >= limit) break;
    }
    if (gone > 64 && gone > (this.bySeq.length - this.head) / 4) this.compact();
    return out;
  }

  /** Lock the writers' seqfile. Fails at once (LockedError) if another writer holds it. */
  lockWriters(): SeqFile {
    return SeqFile.lock(this.sendseqPath, { create: true });
  }

  /**
   * Write a token under a temporary name with the next number, fsync it, and store the number
   * after it. The caller holds the writers' lock and later renames temp to final (publish).
   */
  stage(writers: SeqFile, content: TokenContent, tag: string): { seq: bigint; temp: string; final: string; header: PacketHeader } {
    const seq = writers.read();
    const id = uuidv4();
    const temp = this.queue.jobPath(`net-${tag}-${id}.part`);
    const final = this.queue.jobPath(numberedName(seq, id));
    const header =
      content.kind === 'NOP'
        ? makeHeader({ seq, cmd: { kind: 'NOP' } })
        : makeHeader({ seq, cmd: { kind: 'Command', params: content.params ?? [], env: content.env ?? [] } });
    // Tokens bound for another host (an outbox) are sealed: their length and CRC-32 go in the
    // header, so that a transfer cut or damaged on the way is refused, never committed.
    const sealed = this.spec.extra.remote !== undefined;
    if (sealed) header.seal = sealOfPayload(content.payload);
    const out = fs.openSync(temp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644);
    try {
      const p = content.payload;
      if (p && 'tokens' in p) {
        writePacketSync(out, header);
        copyPayloads(p.tokens, out);
      } else if (p && 'path' in p) {
        const inFd = fs.openSync(p.path, 'r');
        try {
          writePacketSync(out, header, inFd);
        } finally {
          closeQuietly(inFd);
        }
      } else {
        writePacketSync(out, header, p?.fd);
      }
      fsyncSync(out); // its bytes are durable...
      fs.closeSync(out);
      // ...and its name: once the number is stored as taken (next line), recovery must find this
      // file to publish it or turn it into a NOP; without it the numbering would have a hole that
      // a sequence-ordered reader waits on forever.
      fsyncDir(this.queue.jobsDir);
    } catch (err) {
      closeQuietly(out);
      unlinkQuietly(temp);
      throw err;
    }
    writers.write(seq + 1n); // durable (SeqFile.write): after a power cut this number is not handed out again
    return { seq, temp, final, header };
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
    forEachDirEntry(this.queue.jobsDir, (e) => {
      if (isJobFilename(e.name) || isPartName(e.name)) n++;
    });
    return n;
  }

  /** putNow, unless the place holds `capacity` tokens or more: then 'full', and nothing is written. */
  putIfRoom(content: TokenContent, capacity: number | undefined): { seq: bigint; filename: string } | 'full' {
    const writers = this.lockWriters();
    try {
      if (capacity !== undefined && this.occupancy() >= capacity) return 'full';
      const s = this.stage(writers, content, 'put');
      publishDurably(s.temp, s.final);
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
    const wanted = header !== undefined && this.order === 'sequence' && (consumerNext === undefined || header.seq >= consumerNext);
    if (header && taken && !held && wanted) {
      const id = uuidv4();
      const temp = this.queue.jobPath(`net-nop-${id}.part`);
      const fd = fs.openSync(temp, 'w', 0o644);
      try {
        writePacketSync(fd, makeHeader({ seq: header.seq, cmd: { kind: 'NOP' } }));
        fsyncSync(fd);
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
      forEachDirEntry(this.queue.jobsDir, (e) => {
        if (isPartName(e.name)) parts.push(this.queue.jobPath(e.name));
      });
    } catch {
      return [];
    }
    return parts;
  }
}

/** The seal (length and CRC-32) of a token's payload, read once from its sources. */
function sealOfPayload(p: TokenContent['payload']): Seal {
  if (!p) return { length: 0n, crc32: 0 };
  const fds: number[] = [];
  try {
    if ('tokens' in p) for (const file of p.tokens) fds.push(openPayloadFd(file));
    else if ('path' in p) fds.push(fs.openSync(p.path, 'r'));
    else throw new TypeError('a sealed token needs its payload as a file or tokens, not a descriptor');
    const buf = (sealBuffer ??= Buffer.allocUnsafe(1 << 16));
    let crc = 0;
    let length = 0n;
    for (const fd of fds) {
      // Positional reads: the descriptors' own offsets stay where the copy will start.
      let pos = fdOffset(fd) ?? 0;
      for (;;) {
        const n = fs.readSync(fd, buf, 0, buf.length, pos);
        if (n === 0) break;
        crc = crc32Update(buf.subarray(0, n), crc);
        length += BigInt(n);
        pos += n;
      }
    }
    return { length, crc32: crc };
  } finally {
    for (const fd of fds) closeQuietly(fd);
  }
}

let sealBuffer: Buffer | undefined;

/** A token being written by a net writer: jobs/net-*.part. */
function isPartName(name: string): boolean {
  return name.startsWith('net-') && name.endsWith('.part');
}

/**
 * Rename a staged packet into place, not yet durable: the caller fsyncs the directory (once for
 * all it published, see fsyncDirs). 'done' when it had been renamed already (temp gone, final
 * there); 'gone' when neither is there, which only a redone commit meets: its output was renamed,
 * made durable and consumed by a reader since, and the journal's end record for it was lost (a
 * staged file is durable before its commit is recorded, so it can't have vanished unpublished).
 */
export function publish(temp: string, final: string): 'renamed' | 'done' | 'gone' {
  try {
    fs.renameSync(temp, final);
    return 'renamed';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return fs.existsSync(final) ? 'done' : 'gone';
  }
}

/** Publish one staged packet and make it durable (its directory fsynced) before returning. */
export function publishDurably(temp: string, final: string): void {
  if (publish(temp, final) === 'gone') throw new NetError(`The staged token ${temp} vanished before it was renamed to ${path.basename(final)}`);
  fsyncDir(path.dirname(final)); // the new name is durable: the token is in the place to stay
}

/** Open a token's payload: a descriptor positioned after its header. */
export function openPayloadFd(file: string): number {
  const fd = fs.openSync(file, 'r');
  try {
    readHeaderSync(fd);
    return fd;
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
}

/** Copy a token's payload into a file of its own (for commands that read inputs by name). */
export function extractPayload(file: string, dest: string): void {
  const out = fs.openSync(dest, 'w', 0o644);
  try {
    copyPayloads([file], out);
  } finally {
    closeQuietly(out);
  }
}

/** Copy the payloads of these token files, one after the other, to a descriptor; their lengths. */
export function copyPayloads(files: readonly string[], out: number): number[] {
  return files.map((file) => {
    const inFd = openPayloadFd(file);
    try {
      return copy(inFd, out);
    } finally {
      closeQuietly(inFd);
    }
  });
}
