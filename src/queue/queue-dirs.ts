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
 * not a directory at all (undefined). Three access(2) calls, no Stats objects: --queues-in asks
 * it of every directory under a parent.
 */
export function queueDirKind(dir: string): QueueDirEntry['kind'] | undefined {
  // `X/.` resolves only where X is a directory (ENOTDIR otherwise).
  if (!fs.existsSync(`${dir}/.`)) return undefined;
  return fs.existsSync(`${dir}/jobs/.`) && fs.existsSync(`${dir}/nextseq.lock`) ? 'queue' : 'candidate';
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
 * What makes two paths the same queue (`-q q -q ./q`, or a queue given with -q and found under
 * --queues-in too): the directory's real path (realpath(3), symbolic links resolved); the
 * resolved path as given when it can't be found.
 */
export function queueIdentity(dir: string): string {
  try {
    return fs.realpathSync.native(dir);
  } catch {
    return path.resolve(dir);
  }
}
