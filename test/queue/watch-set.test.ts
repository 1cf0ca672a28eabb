/** DirWatchSet: what it reports, and how often it looks. No timing assertions: looks are counted. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DirWatchSet } from '../../src/queue/watch-set.js';
import { tempDir } from '../helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves with the first key reported after it is called. */
function nextReport<K>(): { onChange: (k: K) => void; next: () => Promise<K>; all: K[] } {
  const all: K[] = [];
  let waiting: ((k: K) => void) | undefined;
  return {
    all,
    onChange: (k) => {
      all.push(k);
      const w = waiting;
      waiting = undefined;
      w?.(k);
    },
    next: () => new Promise<K>((resolve) => (waiting = resolve)),
  };
}

describe('DirWatchSet', () => {
  let set: DirWatchSet<string> | undefined;
  afterEach(() => {
    set?.close();
    set = undefined;
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });

  it('reports the directory a job file is renamed into, by its key (events)', async () => {
    const a = tempDir();
    const b = tempDir();
    const r = nextReport<string>();
    set = new DirWatchSet(r.onChange, { safetyInterval: 3600 });
    set.add('a', a);
    set.add('b', b);
    expect(set.mode).toBe('events');
    const got = r.next();
    fs.writeFileSync(path.join(b, 'tmp-x'), 'x');
    fs.renameSync(path.join(b, 'tmp-x'), path.join(b, 'fspl-x.fspl'));
    expect(await got).toBe('b');
  });

  it('ignores names that are not job files unless asked for every name', async () => {
    const jobsOnly = tempDir();
    const parent = tempDir();
    const r = nextReport<string>();
    set = new DirWatchSet(r.onChange, { safetyInterval: 3600 });
    set.add('jobs', jobsOnly);
    set.add('parent', parent, { names: 'all' });
    const got = r.next();
    fs.writeFileSync(path.join(jobsOnly, 'notes.txt'), 'x');
    fs.mkdirSync(path.join(parent, 'q1'));
    expect(await got).toBe('parent');
    await sleep(50);
    expect(r.all).not.toContain('jobs');
  });

  it('applies a filter to the names of events', async () => {
    const dir = tempDir();
    const r = nextReport<string>();
    set = new DirWatchSet(r.onChange, { safetyInterval: 3600 });
    set.add('d', dir, { filter: (name) => name !== 'fspl-own.fspl' });
    fs.writeFileSync(path.join(dir, 'fspl-own.fspl'), 'x');
    await sleep(50);
    expect(r.all).toEqual([]);
    const got = r.next();
    fs.writeFileSync(path.join(dir, 'fspl-other.fspl'), 'x');
    expect(await got).toBe('d');
  });

  it('polling: reports a directory whose times changed, and not one that stayed the same', async () => {
    const quiet = tempDir();
    const busy = tempDir();
    const old = new Date(Date.now() - 3600_000);
    fs.utimesSync(quiet, old, old);
    fs.utimesSync(busy, old, old);
    const r = nextReport<string>();
    // coarseMs 0: times as fine as tmpfs's; ctime (just changed by utimes) is then no reason to look again.
    set = new DirWatchSet(r.onChange, { pollInterval: 0.05, coarseMs: 0 });
    expect(set.mode).toBe('polling');
    set.add('quiet', quiet);
    set.add('busy', busy);
    fs.writeFileSync(path.join(busy, 'fspl-a.fspl'), 'a');
    expect(await r.next()).toBe('busy');
    await sleep(300); // several more polls of both
    expect(r.all).toEqual(['busy']);
  });

  /** A queue as a queue's nextseq sees it: dir/jobs and dir/nextseq, replaced the way queue-set-next does. */
  function queueLike(): { jobs: string; nextseq: string; setNext: (n: number) => void } {
    const dir = tempDir();
    const jobs = path.join(dir, 'jobs');
    fs.mkdirSync(jobs);
    const nextseq = path.join(dir, 'nextseq');
    const setNext = (n: number) => {
      fs.writeFileSync(`${nextseq}.temp`, `${n}\n`);
      fs.renameSync(`${nextseq}.temp`, nextseq);
    };
    setNext(1);
    return { jobs, nextseq, setNext };
  }

  it('file: reports the directory when its file is replaced, not for other names beside it (events)', async () => {
    const q = queueLike();
    const plain = queueLike();
    const r = nextReport<string>();
    set = new DirWatchSet(r.onChange, { safetyInterval: 3600 });
    set.add('q', q.jobs, { file: q.nextseq });
    set.add('plain', plain.jobs); // no file: its nextseq is not its concern
    fs.writeFileSync(path.join(path.dirname(q.nextseq), 'nextseq.lock'), 'a note');
    plain.setNext(5);
    await sleep(50);
    expect(r.all).toEqual([]);
    const got = r.next();
    q.setNext(2);
    expect(await got).toBe('q');
    expect(r.all.every((k) => k === 'q')).toBe(true);
    set.remove('q');
    const n = r.all.length;
    q.setNext(3);
    await sleep(50);
    expect(r.all.length).toBe(n); // its file's watch went with it
  });

  it('file, polling: reports the directory when its file is replaced, its own times unchanged', async () => {
    const q = queueLike();
    const plain = queueLike();
    const old = new Date(Date.now() - 3600_000);
    for (const f of [q.jobs, q.nextseq, plain.jobs, plain.nextseq]) fs.utimesSync(f, old, old);
    const r = nextReport<string>();
    // coarseMs 0: only a change reports (ctime, just set by utimes, is no reason to look again).
    set = new DirWatchSet(r.onChange, { pollInterval: 0.05, coarseMs: 0 });
    set.add('q', q.jobs, { file: q.nextseq });
    set.add('plain', plain.jobs);
    await sleep(150); // several polls: nothing changed
    expect(r.all).toEqual([]);
    plain.setNext(5);
    q.setNext(2);
    expect(await r.next()).toBe('q');
    await sleep(150);
    expect(r.all).toEqual(['q']);
  });

  it('reports a directory changed within the coarse window again at its next look', async () => {
    const dir = tempDir();
    const r = nextReport<string>();
    set = new DirWatchSet(r.onChange, { pollInterval: 0.05, coarseMs: 60_000 });
    set.add('d', dir); // just made: its times are recent, and may hide a change in the same tick
    expect(await r.next()).toBe('d');
    expect(await r.next()).toBe('d');
  });

  it('recheck: the next look reports the directory whatever its times say', async () => {
    const dir = tempDir();
    const old = new Date(Date.now() - 3600_000);
    fs.utimesSync(dir, old, old);
    const r = nextReport<string>();
    set = new DirWatchSet(r.onChange, { pollInterval: 0.05, coarseMs: 0 });
    set.add('d', dir);
    await sleep(150);
    expect(r.all).toEqual([]);
    set.recheck('d');
    expect(await r.next()).toBe('d');
  });

  it('reports a directory removed, and nothing after remove()', async () => {
    const parent = tempDir();
    const dir = path.join(parent, 'q');
    fs.mkdirSync(dir);
    const r = nextReport<string>();
    set = new DirWatchSet(r.onChange, { safetyInterval: 0.05 });
    set.add('q', dir);
    const got = r.next();
    fs.rmSync(dir, { recursive: true });
    expect(await got).toBe('q');
    set.remove('q');
    expect(set.has('q')).toBe(false);
    const n = r.all.length;
    await sleep(200);
    expect(r.all.length).toBe(n);
  });

  it('reports nothing for a directory that an earlier report of the same look removed', async () => {
    const parent = tempDir();
    const dirs = ['a', 'b'].map((n) => {
      fs.mkdirSync(path.join(parent, n));
      return path.join(parent, n);
    });
    const reported: string[] = [];
    // coarseMs large: every look reports what it looks at.
    set = new DirWatchSet(
      (k) => {
        reported.push(k);
        set?.remove(k === 'a' ? 'b' : 'a');
      },
      { pollInterval: 0.1, coarseMs: 60_000 },
    );
    // Added at the same instant: both due at the same first look.
    const at = vi.spyOn(Date, 'now').mockReturnValue(Date.now());
    set.add('a', dirs[0]!);
    set.add('b', dirs[1]!);
    at.mockRestore();
    await sleep(350);
    expect(reported.length).toBeGreaterThan(0);
    expect(new Set(reported).size).toBe(1); // the one removed first is never reported
    expect(set.size).toBe(1);
  });

  it('looks at each of many directories once per interval, a bounded number per tick', async () => {
    const parent = tempDir();
    const dirs: string[] = [];
    for (let i = 0; i < 300; i++) {
      const d = path.join(parent, `q${i}`);
      fs.mkdirSync(d);
      dirs.push(d);
    }
    // Looks counted through fs.statSync: the pure-Node stamps (the addon's batch is tested in test/sys/stamps.test.ts).
    vi.stubEnv('FSPL_NO_NATIVE', '1');
    const stat = vi.spyOn(fs, 'statSync');
    set = new DirWatchSet(() => {}, { pollInterval: 0.2, coarseMs: 0 });
    for (const [i, d] of dirs.entries()) set.add(String(i), d);
    const atAdd = stat.mock.calls.length;
    expect(atAdd).toBe(300); // one look each when added
    await sleep(500); // about two intervals
    const looks = stat.mock.calls.length - atAdd;
    expect(looks).toBeGreaterThanOrEqual(300);
    expect(looks).toBeLessThanOrEqual(3 * 300);
    // Every directory was looked at: none is starved by the others.
    const seen = new Set(stat.mock.calls.slice(atAdd).map((c) => String(c[0])));
    expect(seen.size).toBe(300);
  });

  it('refuses an interval that is not a positive number', () => {
    expect(() => new DirWatchSet(() => {}, { pollInterval: 0 })).toThrow(RangeError);
    expect(() => new DirWatchSet(() => {}, { safetyInterval: -1 })).toThrow(RangeError);
  });
});
