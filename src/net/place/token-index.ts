/**
 * The index of a place's tokens: the ones with the lowest numbers (a window), by name and by
 * number, with their headers kept near the head of the place only, so that a reader's memory
 * does not grow with the tokens waiting.
 */
import type { PacketHeader } from '../../packet/index.js';
import type { Queue } from '../../queue/queue.js';
import { siftDown, siftUp, swapIn } from '../plan/heap.js';
import { IndexedToken, nameNumber, nameOrder, orderKey, type Token } from './token.js';

/** Headers read per batch during a scan: bounds the memory a scan of a big place needs at once. */
const SCAN_CHUNK = 2048;

/**
 * How many tokens of a place a reader indexes at most (Place.window): those with the lowest
 * numbers. Refilling it costs a scan of the directory, once three quarters have been consumed:
 * the window bounds a reader's memory while keeping the rescans of a big place few.
 */
export const INDEX_WINDOW = 16384;

/**
 * Tokens below a place's next number indexed at most, with a window (see refresh): 64, or a quarter of a small window.
 */
const BELOW_FLOOR_INDEXED = 64;

/**
 * The `limit` lowest (order key, name) pairs offered: a max-heap over two parallel arrays (no object
 * per entry), so that a pair beyond them costs one comparison.
 */
class Lowest {
  readonly keys: string[] = [];
  readonly names: string[] = [];
  /** Pairs offered and left out. */
  rejected = 0;
  constructor(private readonly limit: number) {}

  private readonly above = (i: number, j: number): boolean => {
    const a = this.keys[i]!;
    const b = this.keys[j]!;
    return a > b || (a === b && this.names[i]! > this.names[j]!);
  };

  private readonly swap = (i: number, j: number): void => swapIn([this.keys, this.names], i, j);

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
      siftUp(n, this.above, this.swap);
      return;
    }
    this.rejected++;
    const top = this.keys[0]!;
    if (key > top || (key === top && name >= this.names[0]!)) return;
    this.keys[0] = key;
    this.names[0] = name;
    siftDown(0, n, this.above, this.swap);
  }
}

/**
 * A place's tokens as last scanned. Place extends it (place.ts): the runner and `net status` read
 * these fields on every decision, so they stay plain fields of the place.
 */
export abstract class TokenIndex {
  abstract get name(): string;
  abstract readonly queue: Queue;
  /**
   * The tokens indexed, by file name, as last scanned (plus the ones this process wrote since):
   * every token of the place, or the `window` lowest numbers of it.
   */
  tokens = new Map<string, IndexedToken>();
  /** Job files in the place, indexed or not, as last scanned (plus own writes, minus own consumes). */
  count = 0;
  /**
   * How many tokens are indexed at most (set through bound()): the runner bounds the places it reads,
   * and-merge inputs aside, so that its memory does not grow with the tokens waiting; those beyond are
   * counted, and a scan brings them in as the indexed ones are consumed. Infinity: every token.
   */
  window = Infinity;
  /** How many tokens from the head keep their header in memory; the others only name, number and key. */
  private keepHeaders = Infinity;
  /** Whether `tokens` holds every token of the place; if not, all those left out number above `top`. */
  private complete = true;
  /** The highest order key indexed (a bound: it may have been consumed since). */
  private top = '';
  /** Order keys of job files whose name does not tell their number (read from their header once). */
  private foreign = new Map<string, string>();
  /** Tokens by sequence number (lazily sorted; may hold tokens gone since, skipped when read). */
  private bySeq: IndexedToken[] = [];
  private sorted = true;
  /** bySeq before this index holds only tokens gone since. */
  private head = 0;
  /**
   * bySeq before this index held, at the last inOrder, only tokens gone or skipped (a run's claims):
   * the next inOrder with the same `skip` starts here, until unskip().
   */
  private skipped = 0;
  private skippedBy: ((t: Token) => boolean) | undefined;
  /** Set when the directory must be read again (an event, a poll); own writes don't set it. */
  private stale = true;
  /** Told each time the directory must be read again (a runner keeps its places to scan so). */
  onStale: (() => void) | undefined;

  /** Whether the directory must be read again. */
  get dirty(): boolean {
    return this.stale;
  }

  /** The directory changed (an event, a poll, a token vanished): read it again at the next refresh. */
  markDirty(): void {
    this.stale = true;
    this.onStale?.();
  }

  /** Index at most `window` tokens (undefined: all of them), and keep the headers of the first `keepHeaders`. */
  bound(window: number | undefined, keepHeaders: number): void {
    this.keepHeaders = keepHeaders;
    if (window !== undefined) this.window = window;
  }

  /**
   * Scan again: index the tokens with the lowest numbers (all, with no window), reading only the
   * headers of files not seen before; returns the tokens newly indexed. consumerNext: the consumer's
   * next number in a place read in sequence; tokens below it (late copies) are never consumed, so
   * only a few are indexed, enough to report them without crowding out the window.
   */
  // One function: its three passes (names, unnamed headers, new tokens) share
  // the scan's state (lowest, foreign, read, count); apart, they would hand it all around.
  async refresh(now: number, consumerNext?: bigint): Promise<IndexedToken[]> {
    this.stale = false;
    const lowest = new Lowest(this.window);
    const foreign = new Map<string, string>();
    const unread: string[] = [];
    let count = 0;
    const floorKey = this.window !== Infinity && consumerNext !== undefined ? orderKey(consumerNext) : undefined;
    let below = 0;
    const belowMax = Math.min(BELOW_FLOOR_INDEXED, Math.floor(this.window / 4));
    const offer = (key: string, name: string): void => {
      // Left out for good (not "beyond the window": no scan is due for them).
      if (floorKey !== undefined && key < floorKey && ++below > belowMax) return;
      lowest.offer(key, name);
    };
    const floorNum = floorKey !== undefined ? Number(consumerNext) : -Infinity;
    const { bound, names } =
      this.window === Infinity ? { bound: Infinity, names: undefined } : this.windowBound(floorNum);
    let beyond = 0;
    const each = names
      ? (fn: (name: string) => void) => names.forEach(fn)
      : (fn: (name: string) => void) => this.queue.forEachJobFile(fn);
    each((name) => {
      count++;
      let key = this.foreign.get(name);
      if (key !== undefined) foreign.set(name, key);
      else key = nameOrder(name) ?? this.tokens.get(name)?.order;
      if (key === undefined) unread.push(name);
      else if (bound !== Infinity && Number(key) > bound && Number(key) >= floorNum) beyond++;
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
      if (lowest.keys.length >= this.window)
        for (const e of entries) if (lowest.keys[0]! < foreign.get(e.filename)!) read.delete(e.filename);
    }
    this.foreign = foreign;
    const next = new Map<string, IndexedToken>();
    const fresh: IndexedToken[] = [];
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
        const t = this.makeToken(e.filename, e.header, now);
        if (t.order !== nameOrder(e.filename)) {
          // Named with a number that is not its own: placed by its header from now on.
          this.foreign.set(e.filename, t.order);
          this.markDirty();
        }
        fresh.push(t);
      }
    }
    this.count = count;
    this.complete = lowest.rejected === 0 && beyond === 0;
    this.top = top;
    // Headers within keepHeaders of the lowest number stay in memory; the others are read again when needed.
    let floor: bigint | undefined;
    for (const t of next.values()) if (floor === undefined || t.seq < floor) floor = t.seq;
    for (const t of fresh) if (floor === undefined || t.seq < floor) floor = t.seq;
    if (this.keepHeaders !== Infinity && floor !== undefined) {
      const horizon = floor + BigInt(this.keepHeaders);
      for (const t of fresh) if (t.seq >= horizon) t.dropHeader();
    }
    for (const t of fresh) next.set(t.filename, t);
    this.tokens = next;
    for (const t of fresh) this.index(t);
    if (this.bySeq.length > 2 * this.tokens.size + 64) this.compact();
    return fresh;
  }

  /**
   * The highest number the window can reach (the window-th lowest at or above `floor`; Infinity if
   * fewer): names above it are not offered at all, or a directory listed newest first (tmpfs) would
   * pass every name through the window as old-generation garbage. With no more names than the window
   * holds they are returned as the listing, read once. Doubles: a bound rounded above 2^53 only lets
   * more names through.
   */
  private windowBound(floor: number): { bound: number; names?: string[] } {
    const nums: number[] = [];
    let names: string[] | undefined = [];
    this.queue.forEachJobFile((name) => {
      if (names && names.push(name) > this.window) names = undefined;
      const f = this.foreign.get(name);
      const n = f !== undefined ? Number(f) : nameNumber(name);
      if (n !== undefined && n >= floor) nums.push(n);
    });
    if (nums.length <= this.window) return { bound: Infinity, names };
    return { bound: Float64Array.from(nums).sort()[this.window - 1]! };
  }

  /** Forget everything indexed (the place can't be read). */
  clear(): void {
    this.tokens.clear();
    this.foreign.clear();
    this.count = 0;
    this.complete = true;
    this.top = '';
  }

  private makeToken(filename: string, header: PacketHeader, now: number): IndexedToken {
    return new IndexedToken(this.name, this.queue.jobsDir, filename, header, now);
  }

  private index(t: IndexedToken): void {
    const last = this.bySeq[this.bySeq.length - 1];
    if (last && last.seq > t.seq) this.sorted = false;
    this.bySeq.push(t);
  }

  private compact(): void {
    this.bySeq = this.bySeq.filter((t) => this.tokens.get(t.filename) === t);
    this.head = 0;
    this.skipped = 0;
  }

  /** A token inOrder's caller skipped may be taken again (a claim released): inOrder looks from the head again. */
  unskip(): void {
    this.skipped = 0;
  }

  /**
   * A token this process has just written into the place; returns it if indexed now (undefined when a
   * scan indexed it first, or it falls outside the window).
   */
  adopt(filename: string, header: PacketHeader, now: number): IndexedToken | undefined {
    // A scan found it first: indexing it again would leave its first object in the and-merges'
    // joins, where a firing could take it after the token was consumed.
    if (this.tokens.has(filename)) return undefined;
    this.count++;
    const key = orderKey(header.seq);
    if (this.complete ? this.tokens.size >= this.window : key > this.top) {
      // Beyond the window: a later scan indexes it, when its turn comes.
      this.complete = false;
      return undefined;
    }
    if (key > this.top) this.top = key;
    const t = this.makeToken(filename, header, now);
    // Far from the head: its header (and the 8 KiB slab its bytes sit in) is read again in its turn.
    if (this.tokens.size >= this.keepHeaders) t.dropHeader();
    this.tokens.set(filename, t);
    this.index(t);
    return t;
  }

  /** Forget a token this runner consumed (its file is gone or going). */
  forget(filename: string): void {
    if (this.tokens.delete(filename)) this.count = Math.max(0, this.count - 1);
    // Most of the window consumed, and tokens beyond it: time to scan for them.
    if (!this.complete && this.tokens.size <= this.window / 4) this.markDirty();
  }

  /**
   * The tokens present, by sequence number, at most `limit`, skipping those `skip` says (claimed
   * ones); with the same `skip`, a token skipped stays so until unskip() (RunPlaces.release).
   */
  inOrder(limit: number, skip: (t: Token) => boolean): IndexedToken[] {
    if (skip !== this.skippedBy) {
      this.skippedBy = skip;
      this.skipped = 0;
    }
    if (!this.sorted) {
      this.compact();
      this.bySeq.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
      this.sorted = true;
    }
    // Consumed tokens collect at the front: step past them for good (head), so that a reader
    // taking tokens one by one does not rescan them at every decision; compact now and then.
    while (this.head < this.bySeq.length && this.tokens.get(this.bySeq[this.head]!.filename) !== this.bySeq[this.head])
      this.head++;
    if (this.head > 1024 && this.head > this.bySeq.length / 2) {
      this.bySeq = this.bySeq.slice(this.head);
      this.skipped = Math.max(0, this.skipped - this.head);
      this.head = 0;
    }
    const out: IndexedToken[] = [];
    let gone = 0;
    // Past the tokens skipped last time (still gone or skipped), and those found so now.
    let prefix = true;
    for (let i = Math.max(this.head, this.skipped); i < this.bySeq.length; i++) {
      const t = this.bySeq[i]!;
      if (this.tokens.get(t.filename) !== t) {
        gone++;
        if (prefix) this.skipped = i + 1;
        continue;
      }
      if (skip(t)) {
        if (prefix) this.skipped = i + 1;
        continue;
      }
      prefix = false;
      out.push(t);
      if (out.length >= limit) break;
    }
    if (gone > 64 && gone > (this.bySeq.length - this.head) / 4) this.compact();
    return out;
  }
}
