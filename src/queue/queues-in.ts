/**
 * The parents of `queue-process --queues-in PARENT`: which of the directories under each are
 * queues of the run, and which are not queues yet. Looked at again when a parent changes (a queue
 * made or removed) or when a directory that is not a queue yet changes (`queue-init` makes the
 * directory, then jobs/, then nextseq.lock; a synchronisation tool, one file at a time).
 */
import { describeSystemError, QueueError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { listQueueDirs, type QueueDirEntry, queueDirKind } from './queue-dirs.js';

export interface Parent<M> {
  kind: 'parent';
  dir: string;
  /** What is under it, by name: a queue of the run, or a directory that is not a queue yet. */
  names: Map<string, M | Candidate<M>>;
}

/** A directory under a parent that is not a queue (yet): watched, with watch, until it is one. */
export interface Candidate<M> {
  kind: 'candidate';
  dir: string;
  name: string;
  parent: Parent<M>;
}

export interface QueueParentsHooks<M> {
  /**
   * A queue found under parent joins the run; undefined when it is in the run already (given
   * twice). `identity`: its queueIdentity when the listing told it (queue-dirs.ts).
   */
  join(dir: string, parent: Parent<M>, identity: string | undefined): M | undefined;
  /** A queue of the run gone from its parent. */
  forget(m: M): void;
  /** With watch: watch a parent or a candidate (every name's events), or stop watching one. */
  watch?: { add(w: Parent<M> | Candidate<M>, dir: string): void; remove(w: Parent<M> | Candidate<M>): void };
  log: Logger;
}

export class QueueParents<M extends { kind: 'queue' }> {
  constructor(private readonly hooks: QueueParentsHooks<M>) {}

  /** A parent joins the run with the queues under it. Throws QueueError when it can't be read. */
  add(dir: string): void {
    let entries: QueueDirEntry[];
    try {
      entries = listQueueDirs(dir);
    } catch (err) {
      // The error names the parent itself: said once, at the start.
      throw new QueueError(`Cannot read the queues of --queues-in: ${describeSystemError(err)}`, { cause: err });
    }
    const parent: Parent<M> = { kind: 'parent', dir, names: new Map() };
    this.hooks.watch?.add(parent, dir);
    for (const e of entries) this.place(parent, e);
  }

  /** A parent or a candidate changed. */
  look(w: Parent<M> | Candidate<M>): void {
    if (w.kind === 'parent') this.lookAtParent(w);
    else this.lookAtCandidate(w);
  }

  /** Queues made under the parent join the run; queues gone from it are forgotten. */
  private lookAtParent(p: Parent<M>): void {
    let entries: QueueDirEntry[];
    try {
      entries = listQueueDirs(p.dir);
    } catch (err) {
      this.hooks.log.debug(
        'process',
        () => `Cannot read the queues in ${JSON.stringify(p.dir)}: ${describeSystemError(err)}`,
      );
      entries = [];
    }
    const now = new Map(entries.map((e) => [e.name, e]));
    for (const [name, w] of p.names) {
      const e = now.get(name);
      if (e && (w.kind === 'queue' || e.kind === 'candidate')) continue;
      p.names.delete(name);
      if (w.kind === 'candidate') this.hooks.watch?.remove(w);
      else this.hooks.forget(w);
    }
    for (const e of entries) if (!p.names.has(e.name)) this.place(p, e);
  }

  /** Is the candidate a queue now (or gone)? */
  private lookAtCandidate(c: Candidate<M>): void {
    if (c.parent.names.get(c.name) !== c) return;
    const kind = queueDirKind(c.dir);
    if (kind === 'candidate') return;
    c.parent.names.delete(c.name);
    this.hooks.watch?.remove(c);
    if (kind === 'queue') this.place(c.parent, { name: c.name, dir: c.dir, kind });
  }

  /** A directory found under a parent: a queue joins the run; a candidate is watched (with watch) until it is one. */
  private place(parent: Parent<M>, e: QueueDirEntry): void {
    if (e.kind === 'queue') {
      const m = this.hooks.join(e.dir, parent, e.identity);
      if (m) parent.names.set(e.name, m);
      return;
    }
    const watch = this.hooks.watch;
    if (!watch) {
      this.hooks.log.debug('process', () => `Not a queue (no jobs/ or nextseq.lock): ${JSON.stringify(e.dir)}`);
      return;
    }
    const c: Candidate<M> = { kind: 'candidate', dir: e.dir, name: e.name, parent };
    parent.names.set(e.name, c);
    watch.add(c, e.dir);
  }
}
