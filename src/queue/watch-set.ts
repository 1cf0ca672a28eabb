/**
 * Watching many directories at once (the queues of one `queue-process`, the places of a net):
 * file system events for all of them through one inotify instance (libuv keeps one per event
 * loop, whatever the number of fs.watch handles), and ONE timer for every safety look and poll.
 *
 * A look at a directory is one stat, compared with the last look's (ctime, mtime, inode): only a
 * directory that changed, or changed too recently for coarse time stamps to tell, is reported. A
 * directory may come with a file that counts as part of it (a queue's nextseq, beside its jobs/).
 *
 * - events (the default): an event for a job file reports its directory at once; each directory
 *   is also looked at every `safetyInterval` seconds, in case an event was lost (inotify's queue
 *   overflowing, say). A directory that can't be watched is looked at every second instead.
 * - polling (`pollInterval`): no events; each directory is looked at every `pollInterval`
 *   seconds (NFS, SMB, FUSE, where events don't come).
 *
 * Looks are due per directory, not in bursts: each interval has its own list in due order, and a
 * tick looks at no more than LOOKS_PER_TICK directories before yielding.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../base/log.js';
import { stampInto, stampOk } from '../sys/stamps.js';
import { isJobFilename } from './jobs.js';

export interface DirWatchSetOptions {
  /** Poll every this many seconds instead of using file system events. */
  pollInterval?: number;
  /** With events: look at each directory this often anyway, in case an event was lost (default 30 s). */
  safetyInterval?: number;
  logger?: Logger;
  /**
   * A change this close (ms) before a look may not show in the directory's times: such a look
   * reports the next one as a change too. Default 2000 (FAT's 2 s stamps; ext4's are a jiffy).
   */
  coarseMs?: number;
}

export interface DirWatchOptions {
  /** Which names' events count: job files (`fspl-*.fspl`, the default) or every name (a parent of queues). */
  names?: 'jobs' | 'all';
  /** Events for names this returns false for are ignored (a writer's own renames, say). */
  filter?: (name: string) => boolean;
  /** This directory's own safety interval, in seconds (a place fed by a synchronisation tool: more often). */
  safetyInterval?: number;
  /**
   * A file outside the directory whose change counts as the directory's (a queue's nextseq, which
   * `queue-set-next` replaces): its directory's events for its name, and a stat of it at each look.
   */
  file?: string;
  /**
   * Whether a change of file is news: false for the watcher's own writes (a queue's run moving
   * its nextseq), whose events come after the fact and would only make it look again for nothing.
   */
  fileChanged?: () => boolean;
}

/**
 * What the last look saw of a directory (and of its file, if it has one), updated in place by each
 * look: a look makes no object that lives until the next. With 10,000 queues, a look's objects
 * kept 30 s each were promoted and collected as old garbage, a full collection every few minutes
 * (docs/benchmarks-notes.md, "Idle CPU, and the collection 30 s after start").
 */
class Seen {
  readonly dir = new Look();
  /** The entry's file: not ok when it has none, or it is not there. */
  readonly file = new Look();
  /** When it was looked at: a change within COARSE_MS of this may not show in the times. */
  at = 0;

  /** Keep a look (stamps from k: the directory's, then its file's; their stats' success). */
  keep(stamps: Float64Array, k: number, dirOk: boolean, fileOk: boolean, at: number): void {
    this.dir.keep(stamps, k, dirOk);
    this.file.keep(stamps, k + 3, fileOk);
    this.at = at;
  }
}

/** One path's last stat: whether it could be made, and what it saw. */
class Look {
  ok = false;
  ino = 0;
  mtimeMs = 0;
  ctimeMs = 0;

  /** Whether a stat (stamps from k; ok: it succeeded) differs from this one: made, removed, replaced or changed. */
  differs(stamps: Float64Array, k: number, ok: boolean): boolean {
    return (
      ok !== this.ok ||
      (ok && (stamps[k] !== this.ino || stamps[k + 1] !== this.mtimeMs || stamps[k + 2] !== this.ctimeMs))
    );
  }

  /**
   * Whether a change made after this look, in the same tick of a coarse clock, could leave the
   * times as they were. `at` is Date.now(), in whole milliseconds, and a file time has a fraction
   * of one: compared whole, a look in the change's own millisecond is not "too recent" when
   * coarseMs is 0.
   */
  tooRecent(at: number, coarseMs: number): boolean {
    return this.ok && at - Math.floor(Math.max(this.mtimeMs, this.ctimeMs)) < coarseMs;
  }

  keep(stamps: Float64Array, k: number, ok: boolean): void {
    this.ok = ok;
    if (!ok) return;
    this.ino = stamps[k]!;
    this.mtimeMs = stamps[k + 1]!;
    this.ctimeMs = stamps[k + 2]!;
  }
}

interface Entry<K> {
  key: K;
  dir: string;
  /** DirWatchOptions.file and fileChanged. */
  file?: string;
  fileChanged?: () => boolean;
  watcher?: fs.FSWatcher;
  /** The events of file's directory (for file's name). */
  fileWatcher?: fs.FSWatcher;
  /** Seconds between looks: the poll or safety interval, or the fallback when events fail. */
  interval: number;
  due: number;
  readonly seen: Seen;
  removed: boolean;
  /** Report the next look as a change, whatever it sees (recheck). */
  force: boolean;
}

/** Looks at most this many directories per turn of the event loop. */
const LOOKS_PER_TICK = 128;
/** A directory whose watch failed is looked at this often (seconds). */
const FALLBACK_SECONDS = 1;
/** Time stamps on some file systems are this coarse (FAT: 2 s; ext4: a jiffy). */
const COARSE_MS = 2000;
const MAX_TIMER_MS = 0x7fff_ffff;

export class DirWatchSet<K> {
  /** 'events' or 'polling': how changes are noticed (before any per-directory fallback). */
  readonly mode: 'events' | 'polling';
  private readonly entries = new Map<K, Entry<K>>();
  /** One list per interval, each in due order (every entry in it was last due `interval` before). */
  private readonly lists = new Map<number, Entry<K>[]>();
  private readonly onChange: (key: K) => void;
  private readonly log: Logger | undefined;
  private readonly interval: number;
  private readonly coarseMs: number;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private closed = false;

  constructor(onChange: (key: K) => void, options: DirWatchSetOptions = {}) {
    this.onChange = onChange;
    this.log = options.logger;
    this.mode = options.pollInterval !== undefined ? 'polling' : 'events';
    this.interval = checkInterval(options.pollInterval ?? options.safetyInterval ?? 30);
    this.coarseMs = options.coarseMs ?? COARSE_MS;
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /**
   * Watch dir under key (replacing what key watched). Add before the first scan of the directory,
   * so that nothing arriving in between is missed.
   */
  add(key: K, dir: string, options: DirWatchOptions = {}): void {
    this.remove(key);
    const interval = this.mode === 'polling' ? this.interval : checkInterval(options.safetyInterval ?? this.interval);
    const entry: Entry<K> = {
      key,
      dir,
      file: options.file,
      fileChanged: options.fileChanged,
      interval,
      due: 0,
      seen: new Seen(),
      removed: false,
      force: false,
    };
    const stamps = lookAll([entry]);
    const dirOk = stampOk(stamps, 0);
    entry.seen.keep(stamps, 0, dirOk, dirOk && entry.file !== undefined && stampOk(stamps, 3), Date.now());
    this.entries.set(key, entry);
    if (this.mode === 'events') this.listen(entry, options);
    this.enqueue(entry, Date.now());
  }

  /** Stop watching key (nothing happens for an unknown key). */
  remove(key: K): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    entry.removed = true; // its place in a list is dropped when the list reaches it
    closeWatchers(entry);
    this.entries.delete(key);
  }

  /**
   * Report key's next look as a change even if its directory's times have not moved: for a
   * directory whose last scan found a job file it could not read yet (written in place, not
   * renamed in), whose completion changes the file, not the directory.
   */
  recheck(key: K): void {
    const entry = this.entries.get(key);
    if (entry) entry.force = true;
  }

  close(): void {
    this.closed = true;
    for (const key of [...this.entries.keys()]) this.remove(key);
    this.lists.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private listen(entry: Entry<K>, options: DirWatchOptions): void {
    const all = options.names === 'all';
    const filter = options.filter;
    try {
      entry.watcher = fs.watch(entry.dir, { persistent: true }, (_event, name) => {
        if (entry.removed) return;
        const n = name === null ? null : String(name);
        if (n === null || ((all || isJobFilename(n)) && (filter?.(n) ?? true))) this.onChange(entry.key);
      });
      entry.watcher.on('error', (err) => this.fallBack(entry, err));
      if (entry.file !== undefined) this.listenFile(entry, entry.file);
    } catch (err) {
      this.fallBack(entry, err);
    }
  }

  /** Events for file's name in its directory: a rename over it (queue-set-next), a write in place. */
  private listenFile(entry: Entry<K>, file: string): void {
    const name = path.basename(file);
    entry.fileWatcher = fs.watch(path.dirname(file), { persistent: true }, (_event, n) => {
      if (!entry.removed && (n === null || String(n) === name) && (entry.fileChanged?.() ?? true))
        this.onChange(entry.key);
    });
    entry.fileWatcher.on('error', (err) => this.fallBack(entry, err));
  }

  /** Events failed for this directory (it is gone, or the file system has none): look every second. */
  private fallBack(entry: Entry<K>, err: unknown): void {
    if (entry.removed) return;
    closeWatchers(entry);
    if (entry.interval !== FALLBACK_SECONDS) {
      this.log?.debug(
        'watch',
        () =>
          `Cannot watch ${JSON.stringify(entry.dir)} (${(err as Error).message}); ` +
          `looking every ${FALLBACK_SECONDS} s instead`,
      );
      entry.interval = FALLBACK_SECONDS;
      this.enqueue(entry, Date.now());
    }
    this.onChange(entry.key);
  }

  private enqueue(entry: Entry<K>, now: number): void {
    if (this.closed) return;
    entry.due = now + entry.interval * 1000;
    let list = this.lists.get(entry.interval);
    if (!list) this.lists.set(entry.interval, (list = []));
    list.push(entry);
    this.arm(entry.due);
  }

  /** Make sure the timer fires by `at`. */
  private arm(at: number): void {
    if (this.closed || at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())));
  }

  /** Look at the directories that are due, at most LOOKS_PER_TICK of them, then re-arm the timer. */
  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    const due: Entry<K>[] = [];
    let next = Infinity;
    for (const [interval, list] of this.lists) {
      let i = 0;
      for (; i < list.length; i++) {
        const entry = list[i]!;
        if (entry.removed || entry.interval !== interval) continue; // removed, or moved to the fallback list
        if (entry.due > now || due.length === LOOKS_PER_TICK) break;
        due.push(entry);
      }
      list.splice(0, i);
      if (list.length === 0) this.lists.delete(interval);
      else next = Math.min(next, due.length === LOOKS_PER_TICK ? now : list[0]!.due);
    }
    // The looked-at go to their lists' ends (enqueue), due later than any head.
    const stamps = lookAll(due);
    const at = Date.now();
    for (let i = 0, k = 0; i < due.length; i++) {
      const entry = due[i]!;
      // An earlier one's onChange may have removed it.
      if (!entry.removed) this.visit(entry, stamps, k, at, now);
      k += entry.file === undefined ? 3 : 6;
    }
    if (next !== Infinity) this.arm(next);
  }

  /** Compare a look (stamps from k: the directory's, then its file's) with the last, and keep it. */
  private visit(entry: Entry<K>, stamps: Float64Array, k: number, at: number, now: number): void {
    const seen = entry.seen;
    // A directory that could not be looked at keeps no file either.
    const dirOk = stampOk(stamps, k);
    const fileOk = dirOk && entry.file !== undefined && stampOk(stamps, k + 3);
    const dirChanged = !dirOk || seen.dir.differs(stamps, k, true) || seen.dir.tooRecent(seen.at, this.coarseMs);
    const fileChanged = seen.file.differs(stamps, k + 3, fileOk) || seen.file.tooRecent(seen.at, this.coarseMs);
    const changed = entry.force || dirChanged || (fileChanged && (entry.fileChanged?.() ?? true));
    seen.keep(stamps, k, dirOk, fileOk, at);
    entry.force = false;
    this.enqueue(entry, now);
    if (changed) this.onChange(entry.key);
  }
}

function checkInterval(seconds: number): number {
  if (!(seconds > 0))
    throw new RangeError(`DirWatchSet: invalid interval ${seconds}: give a number of seconds above 0`);
  return seconds;
}

function closeWatchers(entry: Entry<unknown>): void {
  entry.watcher?.close();
  entry.watcher = undefined;
  entry.fileWatcher?.close();
  entry.fileWatcher = undefined;
}

/**
 * One stat of each entry's directory (and of its file), in stampInto's buffer: three numbers for
 * the directory, then three for its file if it has one (a NaN inode where the stat failed).
 */
function lookAll(entries: readonly Entry<unknown>[]): Float64Array {
  const paths: string[] = [];
  for (const e of entries) {
    paths.push(e.dir);
    if (e.file !== undefined) paths.push(e.file);
  }
  return stampInto(paths);
}
