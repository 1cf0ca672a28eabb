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
  /** Its queueIdentity, known from the listing for a directory that is no link: the parent's real path and the name. */
  identity?: string;
}

/**
 * What a directory is: a queue that can be processed (a jobs/ directory and a nextseq.lock: an
 * append-only queue has no lock and is not processed), a directory that is not one (yet), or
 * not a directory at all (undefined). Two access(2) calls for a queue, no Stats objects:
 * --queues-in asks it of every directory under a parent.
 */
export function queueDirKind(dir: string): QueueDirEntry['kind'] | undefined {
  // `X/.` resolves only where X is a directory (ENOTDIR otherwise): jobs/. found, dir is one too.
  if (fs.existsSync(`${dir}/jobs/.`)) return fs.existsSync(`${dir}/nextseq.lock`) ? 'queue' : 'candidate';
  return fs.existsSync(`${dir}/.`) ? 'candidate' : undefined;
}

/** Why a directory found under a parent is not (yet) a queue a processor takes, in a few words. */
export function whyNotQueue(dir: string): string {
  if (!fs.existsSync(`${dir}/jobs/.`)) return 'no jobs/';
  if (!fs.existsSync(`${dir}/nextseq.lock`)) return 'no nextseq.lock: an append-only queue, or one still being made';
  return 'a queue';
}

/**
 * A parent under which no queue is found, said in one line: the parent is itself a queue (an easy
 * slip: `--queues-in QUEUE`), holds no directories, or holds directories that are not queues
 * (the first few, each with why). Undefined when a queue is there, or the parent can't be read
 * (listing it says why).
 */
export function noQueueUnder(parent: string): string | undefined {
  let names: string[];
  try {
    names = dirsUnder(parent);
  } catch {
    return undefined;
  }
  // One queue is enough, and it is usually the first: a pass over thousands of queues looks at them once, not twice.
  if (names.some((name) => queueDirKind(path.join(parent, name)) === 'queue')) return undefined;
  const entries = queueDirsOf(parent, names);
  if (queueDirKind(parent) === 'queue')
    return `${parent} is itself a queue, not a parent of queues: serve it with -q ${parent}`;
  if (entries.length === 0) return `${parent} holds no directory`;
  const shown = entries.slice(0, 5).map((e) => `${e.name} (${whyNotQueue(e.dir)})`);
  const more = entries.length > shown.length ? `, and ${entries.length - shown.length} more` : '';
  return `no queue under ${parent}: ${shown.join(', ')}${more}`;
}

/**
 * The directories directly under parent, sorted by name (a cron pass visits them in a stable
 * order), each a queue or a candidate. Files and hidden entries (names starting with '.', as
 * Syncthing's `.stfolder`) are left out. Throws when parent can't be read.
 */
export function listQueueDirs(parent: string): QueueDirEntry[] {
  const entries = dirEntriesUnder(parent);
  // A directory listed as one (no link) is its parent's real path and its name: one realpath(3)
  // for the parent, not one a queue (each a readlink(2) for every component of its path).
  const plain = new Set(entries.filter((e) => e.isDirectory()).map((e) => e.name));
  const real = plain.size > 0 ? realPath(parent) : undefined;
  const identity =
    real === undefined
      ? undefined
      : (name: string) => (plain.has(name) ? (real === '/' ? `/${name}` : `${real}/${name}`) : undefined);
  return queueDirsOf(
    parent,
    entries.map((e) => e.name),
    identity,
  );
}

/** The entries of `names` under parent that are directories, by name, each a queue or a candidate. */
function queueDirsOf(
  parent: string,
  names: readonly string[],
  identity?: (name: string) => string | undefined,
): QueueDirEntry[] {
  const out: QueueDirEntry[] = [];
  for (const name of names) {
    const dir = path.join(parent, name);
    const kind = queueDirKind(dir);
    if (!kind) continue;
    const id = identity?.(name);
    out.push(id === undefined ? { name, dir, kind } : { name, dir, kind, identity: id });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** realpath(3) of a directory; undefined when it can't be had. */
function realPath(dir: string): string | undefined {
  try {
    return fs.realpathSync.native(dir);
  } catch {
    return undefined;
  }
}

/** An entry that may be a directory (or a link to one) and is not hidden. */
function mayBeDir(e: fs.Dirent): boolean {
  return !e.name.startsWith('.') && (e.isDirectory() || e.isSymbolicLink());
}

/** The entries under parent that may be directories (or links to them), hidden ones left out; throws when parent can't be read. */
function dirEntriesUnder(parent: string): fs.Dirent[] {
  return fs.readdirSync(parent, { withFileTypes: true }).filter(mayBeDir);
}

/** dirEntriesUnder's names. */
function dirsUnder(parent: string): string[] {
  return dirEntriesUnder(parent).map((e) => e.name);
}

/**
 * What makes two paths the same queue (`-q q -q ./q`, or a queue given with -q and found under
 * --queues-in too): the directory's real path (realpath(3), symbolic links resolved); the
 * resolved path as given when it can't be found.
 */
export function queueIdentity(dir: string): string {
  return realPath(dir) ?? path.resolve(dir);
}
