/**
 * I/O faults of a run: a full disk (ENOSPC, EDQUOT) or an I/O error (EIO) met while committing
 * into a place, or while a firing staged its output. Neither stops the run: the commit that met
 * one is undone or finished later (commit.ts), the firing waits and commits again after a backoff
 * (run/open-firings.ts), and the run says which place met which error since when (the live state, `net
 * status`, the web page, `fspl_net_io_errors_total`). A place's fault is over once a commit
 * touching it succeeds.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describeSystemError } from '../../base/errors.js';
import { backoffMs as backoff } from '../../base/timer.js';

/** Where a fault outside every place is counted: the net's state directory (journal, staging). */
export const STATE_PLACE = '(state)';

/** Whether a run waits this error out (a full disk, an I/O error) rather than stopping on it: sys/io.ts. */
export { isIoFault } from '../../sys/io.js';

/** A place's current fault: what it met first, since when, how often. */
export interface PlaceFault {
  place: string;
  /** ENOSPC, EDQUOT or EIO. */
  code: string;
  /** The last error's message. */
  message: string;
  /** When the fault began (ms since the epoch). */
  since: number;
  /** When it was last met. */
  last: number;
  /** How many times it was met since it began. */
  count: number;
}

/** I/O errors met over the run, by place and error (the counter fspl_net_io_errors_total). */
export interface IoErrorCount {
  place: string;
  error: string;
  count: number;
}

/** The faults of one run. */
export class IoFaults {
  private readonly current = new Map<string, PlaceFault>();
  private readonly totals = new Map<string, IoErrorCount>();

  constructor(private readonly onChange: () => void = () => {}) {}

  /** `place` (or STATE_PLACE) met `err` at `now`. */
  report(place: string, err: NodeJS.ErrnoException, now = Date.now()): void {
    const code = err.code ?? 'EIO';
    const key = `${place}\u0000${code}`;
    const t = this.totals.get(key) ?? { place, error: code, count: 0 };
    t.count++;
    this.totals.set(key, t);
    const f = this.current.get(place);
    if (f) {
      f.last = now;
      f.count++;
      f.message = faultText(err);
      if (f.code !== code) Object.assign(f, { code, since: now, count: 1 });
    } else this.current.set(place, { place, code, message: faultText(err), since: now, last: now, count: 1 });
    this.onChange();
  }

  /** A commit into these places succeeded: their faults are over (and the state's, which every commit writes). */
  cleared(places: Iterable<string>): void {
    let changed = this.current.delete(STATE_PLACE);
    for (const p of places) changed = this.current.delete(p) || changed;
    if (changed) this.onChange();
  }

  get any(): boolean {
    return this.current.size > 0;
  }

  list(): PlaceFault[] {
    return [...this.current.values()].map((f) => ({ ...f }));
  }

  counts(): IoErrorCount[] {
    return [...this.totals.values()].map((c) => ({ ...c }));
  }
}

/** The place whose directory holds `file` (the longest match), or STATE_PLACE. */
export function placeOfPath(file: string | undefined, dirs: Iterable<{ name: string; dir: string }>): string {
  if (!file) return STATE_PLACE;
  let best: { name: string; len: number } | undefined;
  for (const { name, dir } of dirs) {
    const d = path.resolve(dir);
    if ((file === d || file.startsWith(`${d}${path.sep}`)) && d.length > (best?.len ?? -1))
      best = { name, len: d.length };
  }
  return best?.name ?? STATE_PLACE;
}

/** An error's message as the run reports it: its words and path (`No space left on device: DIR/jobs`). */
export function faultText(err: NodeJS.ErrnoException): string {
  return describeSystemError(err);
}

/** The wait before the n-th try again (n from 1) after a fault: 200 ms doubling, at most 5 s. */
export function backoffMs(n: number): number {
  return backoff(n, 200, 5000);
}

/**
 * Whether the file system of `dir` is full (under 64 KiB, or no inode, left to this user). A
 * firing's command that fails while the disk of its staging files is full most likely failed to
 * write its output there: its failure is the disk's, not the command's (its partial output is still
 * in staging when this is asked, so the disk still shows full).
 */
export function stagingFull(dir: string): NodeJS.ErrnoException | undefined {
  try {
    const s = fs.statfsSync(dir);
    const full = s.bavail * s.bsize < 64 * 1024 || (s.files > 0 && s.ffree === 0);
    return full ? diskFullError(dir) : undefined;
  } catch {
    return undefined;
  }
}

function diskFullError(dir: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`No space left on device: ${dir}`), { code: 'ENOSPC', path: dir });
}
