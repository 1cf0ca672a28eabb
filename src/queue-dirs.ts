/**
 * Finding queue directories for `queue-process --queues-in PARENT`: the directories directly under
 * a parent that are queues a processor can take, and the ones that may become queues (being made
 * by `queue-init`, or by a synchronisation tool, one file at a time).
 */
import fs from 'node:fs';
import path from 'node:path';

/** A directory directly under a parent, by what it is now. */
export interface QueueDirEntry {
  name: string;
  /** The parent as given, joined with the name (as FSPL_JOB_QUEUEDIR will show it). */
  dir: string;
  /** 'queue': jobs/ and nextseq.lock are there; 'candidate': a directory that is not (yet) a queue. */
  kind: 'queue' | 'candidate';
}

/**
 * What a directory is: a queue that can be processed (a jobs/ directory and a nextseq.lock: an
 * append-only queue has no lock and is not processed), a directory that is not one (yet), or
 * not a directory at all (undefined).
 */
export function queueDirKind(dir: string): QueueDirEntry['kind'] | undefined {
  try {
    if (!fs.statSync(dir).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  try {
    if (fs.statSync(path.join(dir, 'jobs')).isDirectory() && fs.statSync(path.join(dir, 'nextseq.lock')).isFile()) return 'queue';
  } catch {
    // not (yet) a queue
  }
  return 'candidate';
}

/**
 * The directories directly under parent, sorted by name (a cron pass visits them in a stable
 * order), each a queue or a candidate. Files and hidden entries (names starting with '.', as
 * Syncthing's `.stfolder`) are left out. Throws when parent can't be read.
 */
export function listQueueDirs(parent: string): QueueDirEntry[] {
  const out: QueueDirEntry[] = [];
  for (const e of fs.readdirSync(parent, { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue;
    if (!e.isDirectory() && !e.isSymbolicLink()) continue;
    const dir = path.join(parent, e.name);
    const kind = queueDirKind(dir);
    if (kind) out.push({ name: e.name, dir, kind });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * What makes two paths the same queue: the directory's device and inode (`-q q -q ./q`, or a
 * queue given with -q and found under --queues-in too); the resolved path when it can't be read.
 */
export function queueIdentity(dir: string): string {
  try {
    const st = fs.statSync(dir);
    return `${st.dev}:${st.ino}`;
  } catch {
    return `path:${path.resolve(dir)}`;
  }
}
