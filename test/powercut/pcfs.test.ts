/**
 * The power-cut file system's controls: what it keeps across a cut must be exactly what POSIX
 * promises after fsync (of files for their data, of directories for their entries), and nothing
 * more. A careless writer must lose data under it, a careful one must not; and a cut must leave
 * no process of the workload alive.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import fsExt from 'fs-ext';
import { afterEach, beforeAll, beforeEach, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { onPath } from '../harness/proc.js';
import { ROOT } from '../helpers.js';
import {
  buildPcfs,
  mountPowercut,
  mountUsers,
  PCFS_CTL,
  type PowercutFs,
  powercutMissing,
  spawnWorkload,
} from './harness.js';

const missing = [...powercutMissing(), ...(onPath('flock') ? [] : ['flock (util-linux)'])];

let pc: PowercutFs;
const P = (...p: string[]) => path.join(pc.root, ...p);

/** Write a file (truncating it); with fsync, make its data durable. */
function put(rel: string, data: string, opts: { fsync?: boolean; flag?: string } = {}): void {
  const fd = fs.openSync(P(rel), opts.flag ?? 'w');
  try {
    fs.writeSync(fd, data);
    if (opts.fsync) fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** fsync a directory, the way the project does it. */
function fsyncDir(rel = '.'): void {
  const fd = fs.openSync(P(rel), 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The careful way: temp file, fsync, rename, fsync of the directory. */
function carefulWrite(rel: string, data: string): void {
  const tmp = `${rel}.tmp`;
  put(tmp, data, { fsync: true });
  fs.renameSync(P(tmp), P(rel));
  fsyncDir(path.dirname(rel));
}

/** The whole tree: "dir/" for directories, "file" -> content, "link" -> "-> target". */
function tree(rel = '.'): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (r: string) => {
    for (const name of fs.readdirSync(P(r)).sort()) {
      const sub = r === '.' ? name : `${r}/${name}`;
      const st = fs.lstatSync(P(sub));
      if (st.isDirectory()) {
        out[`${sub}/`] = '';
        walk(sub);
      } else if (st.isSymbolicLink()) out[sub] = `-> ${fs.readlinkSync(P(sub))}`;
      else out[sub] = fs.readFileSync(P(sub), 'utf8');
    }
  };
  walk(rel);
  return out;
}

describeIfPresent(
  'pcfs: the power-cut file system',
  missing,
  { what: 'power-cut tests', note: 'apt-get install fuse3 libfuse3-dev pkg-config gcc; run as root' },
  () => {
    beforeAll(async () => {
      await buildPcfs();
    });
    beforeEach(async () => {
      pc = await mountPowercut();
    });
    afterEach(async () => {
      await pc?.unmount();
    });

    test('fsync of a file and of a directory (as Node does it) reach pcfs', async () => {
      put('f', 'x');
      expect(await pc.counters()).toMatchObject({ dirtyFiles: 1, dirtyDirs: 1 });
      const fd = fs.openSync(P('f'), 'r');
      fs.fsyncSync(fd); // read-only descriptors may fsync too
      fs.closeSync(fd);
      expect(await pc.counters()).toMatchObject({ dirtyFiles: 0, dirtyDirs: 1 });
      fsyncDir();
      expect(await pc.counters()).toMatchObject({ dirtyFiles: 0, dirtyDirs: 0 });
      const rw = fs.openSync(P('f'), 'r+');
      fs.writeSync(rw, 'y');
      expect((await pc.counters()).dirtyFiles).toBe(1);
      fs.fdatasyncSync(rw);
      fs.closeSync(rw);
      expect((await pc.counters()).dirtyFiles).toBe(0);
      expect(fs.readdirSync(pc.root)).toEqual(['f']); // the control file is hidden
      expect(fs.existsSync(P(PCFS_CTL))).toBe(true);
    });

    test('a careless writer (write, rename into place, no fsync) loses everything', async () => {
      put('old', 'durable');
      await pc.sync();
      for (let i = 0; i < 5; i++) {
        put(`job${i}.tmp`, `job ${i}`);
        fs.renameSync(P(`job${i}.tmp`), P(`job${i}`));
      }
      put('old.tmp', 'replaced');
      fs.renameSync(P('old.tmp'), P('old'));
      fs.mkdirSync(P('newdir'));
      put('newdir/f', 'f');
      expect(Object.keys(tree())).toHaveLength(8);
      await pc.cut();
      expect(tree()).toEqual({ old: 'durable' });
    });

    test('fsync of a new file without fsync of its directory: the name is gone', async () => {
      put('a', 'data', { fsync: true });
      await pc.cut();
      expect(tree()).toEqual({});
    });

    test('a careful writer (tmp, fsync, rename, fsync the directory) loses nothing', async () => {
      fs.mkdirSync(P('jobs'));
      fsyncDir();
      fsyncDir('jobs');
      for (let i = 0; i < 5; i++) carefulWrite(`jobs/job${i}`, `job ${i}`);
      carefulWrite('top', 'top');
      await pc.cut();
      const want: Record<string, string> = { 'jobs/': '', top: 'top' };
      for (let i = 0; i < 5; i++) want[`jobs/job${i}`] = `job ${i}`;
      expect(tree()).toEqual(want);
      expect(await pc.counters()).toMatchObject({ cuts: 1, dirtyFiles: 0, dirtyDirs: 0, missing: 0 });
    });

    test(
      'fsync of the directory without fsync of the file: ' + 'the name survives, with the data of the last fsync',
      async () => {
        put('old', 'old content', { fsync: true });
        fsyncDir();
        put('old', 'new content'); // rewritten in place (O_TRUNC), never fsynced
        put('new', 'new file'); // created, never fsynced
        fsyncDir();
        await pc.cut();
        expect(tree()).toEqual({ old: 'old content', new: '' });
      },
    );

    test(
      'changes inside the durable part of a file are ' + 'undone (the durable content is copied aside first)',
      async () => {
        put('f', 'abcdefgh', { fsync: true });
        put('g', '12345678', { fsync: true });
        put('h', 'keep', { fsync: true });
        fsyncDir();
        const fd = fs.openSync(P('f'), 'r+');
        fs.writeSync(fd, 'XY', 3); // in the middle
        fs.closeSync(fd);
        fs.truncateSync(P('g'), 2);
        put('g', 'zz', { flag: 'a' });
        fs.appendFileSync(P('h'), ' and more'); // past the durable size: nothing copied
        expect(tree()).toEqual({ f: 'abcXYfgh', g: '12zz', h: 'keep and more' });
        expect((await pc.counters()).shadowCopies).toBe(2);
        await pc.cut();
        expect(tree()).toEqual({ f: 'abcdefgh', g: '12345678', h: 'keep' });
      },
    );

    test('a rename made durable at its target only: the file has both names; at its source only: neither', async () => {
      for (const d of ['src', 'dst']) fs.mkdirSync(P(d));
      put('src/a', 'A');
      put('src/b', 'B');
      await pc.sync();
      fs.renameSync(P('src/a'), P('dst/a'));
      fsyncDir('dst'); // target durable, source not
      fs.renameSync(P('src/b'), P('dst/b'));
      fsyncDir('src'); // source durable (both a and b gone from src), target not
      await pc.cut();
      // a: durable in dst (fsynced after its rename) and still durable in src (src's fsync came
      // after b's rename, so it also made a's removal durable). So: src/a gone. b: gone from src, never
      // durable in dst.
      expect(tree()).toEqual({ 'dst/': '', 'dst/a': 'A', 'src/': '' });

      // Now the other order: the source directory never fsynced.
      put('src/c', 'C');
      await pc.sync();
      fs.renameSync(P('src/c'), P('dst/c'));
      fsyncDir('dst');
      await pc.cut();
      expect(tree()).toEqual({ 'dst/': '', 'dst/a': 'A', 'dst/c': 'C', 'src/': '', 'src/c': 'C' });
      // One inode with two names, as a real file system could leave it.
      expect(fs.statSync(P('src/c')).ino).toBe(fs.statSync(P('dst/c')).ino);
      expect(fs.statSync(P('src/c')).nlink).toBe(2);
    });

    test('a rename over an existing file, not made durable, comes undone', async () => {
      put('a', 'new');
      put('b', 'old');
      await pc.sync();
      fs.renameSync(P('a'), P('b'));
      expect(tree()).toEqual({ b: 'new' });
      await pc.cut();
      expect(tree()).toEqual({ a: 'new', b: 'old' });
      fs.renameSync(P('a'), P('b'));
      fsyncDir();
      await pc.cut();
      expect(tree()).toEqual({ b: 'new' });
    });

    test('unlink and rmdir not made durable come back; made durable, stay gone', async () => {
      fs.mkdirSync(P('d'));
      fs.mkdirSync(P('e'));
      put('d/f', 'F');
      put('g', 'G');
      fs.symlinkSync('g', P('s'));
      await pc.sync();
      fs.unlinkSync(P('d/f'));
      fs.rmdirSync(P('d'));
      fs.unlinkSync(P('g'));
      fs.unlinkSync(P('s'));
      fs.rmdirSync(P('e'));
      expect(tree()).toEqual({});
      await pc.cut();
      expect(tree()).toEqual({ 'd/': '', 'd/f': 'F', 'e/': '', g: 'G', s: '-> g' });
      fs.unlinkSync(P('d/f'));
      fs.rmdirSync(P('d'));
      fs.unlinkSync(P('g'));
      fsyncDir(); // removes d and g durably; d/f's unlink is not durable, but d is gone
      await pc.cut();
      expect(tree()).toEqual({ 'e/': '', s: '-> g' });
      expect(fs.readdirSync(path.join(pc.dir, 'work', 'grave'))).toEqual([]); // the graveyard is emptied
    });

    test('an unlinked file still open keeps working, and its unlink is undone by a cut', async () => {
      put('f', 'hello');
      await pc.sync();
      const fd = fs.openSync(P('f'), 'r+');
      fs.unlinkSync(P('f'));
      expect(fs.fstatSync(fd).nlink).toBe(0);
      fs.writeSync(fd, 'HE', 0);
      expect(fs.readFileSync(fd, 'utf8')).toBe('HEllo');
      fs.closeSync(fd);
      await pc.cut();
      expect(tree()).toEqual({ f: 'hello' });

      // Its directory can go while it is open (libfuse's hidden name for it does not count).
      fs.mkdirSync(P('d'));
      put('d/g', 'G');
      const gd = fs.openSync(P('d/g'), 'r');
      fs.unlinkSync(P('d/g'));
      expect(fs.readdirSync(P('d'))).toEqual([]);
      fs.rmdirSync(P('d'));
      expect(fs.readSync(gd, Buffer.alloc(1))).toBe(1);
      fs.closeSync(gd);
      expect(tree()).toEqual({ f: 'hello' });
    });

    test('O_APPEND appends; fsynced records survive a cut, later ones vanish', async () => {
      put('journal', '', { fsync: true });
      fsyncDir();
      const a = fs.openSync(P('journal'), 'a');
      const b = fs.openSync(P('journal'), 'a');
      fs.writeSync(a, 'r1\n');
      fs.writeSync(b, 'r2\n');
      fs.writeSync(a, 'r3\n');
      fs.fsyncSync(b); // any descriptor of the file will do
      fs.writeSync(b, 'r4\n');
      fs.writeSync(a, 'r5\n');
      expect(fs.readFileSync(P('journal'), 'utf8')).toBe('r1\nr2\nr3\nr4\nr5\n');
      fs.closeSync(a);
      fs.closeSync(b);
      // An append by another process (a shell's >>) lands at the end too.
      expect(spawnSync('sh', ['-c', 'echo r6 >> journal'], { cwd: pc.root }).status).toBe(0);
      expect(fs.readFileSync(P('journal'), 'utf8')).toBe('r1\nr2\nr3\nr4\nr5\nr6\n');
      expect((await pc.counters()).shadowCopies).toBe(0); // appends never copy the durable part
      await pc.cut();
      expect(tree()).toEqual({ journal: 'r1\nr2\nr3\n' });
      // A write through an O_SYNC descriptor is durable when it returns.
      const s = fs.openSync(P('journal'), fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_SYNC);
      fs.writeSync(s, 'r7\n');
      fs.closeSync(s);
      fs.appendFileSync(P('journal'), 'r8\n');
      await pc.cut();
      expect(tree()).toEqual({ journal: 'r1\nr2\nr3\nr7\n' });
    });

    test('flock and fcntl locks work across processes on the mount, and die with their holders', async () => {
      put('q.lock', '');
      const fd = fs.openSync(P('q.lock'), 'r+');
      fsExt.flockSync(fd, 'exnb');
      expect(spawnSync('flock', ['-n', P('q.lock'), 'true']).status).toBe(1);
      fsExt.flockSync(fd, 'un');
      expect(spawnSync('flock', ['-n', P('q.lock'), 'true']).status).toBe(0);

      // fcntl (POSIX) record locks: held here, refused to another process. (fs-ext's fcntlSync
      // fails with EFAULT for F_SETLK; its asynchronous fcntl works.)
      const setlk = (type: number) =>
        new Promise<void>((resolve, reject) =>
          fsExt.fcntl(fd, 'setlk', type, (e?: Error | null) => (e ? reject(e) : resolve())),
        );
      await setlk(fsExt.constants.F_WRLCK);
      const probe = `const f=require('fs'),x=require('fs-ext');const fd=f.openSync(process.argv[1],'r+');
      x.fcntl(fd,'setlk',x.constants.F_WRLCK,(e)=>console.log(e?e.code:'got'))`;
      const other = spawnSync(process.execPath, ['-e', probe, P('q.lock')], { cwd: ROOT, encoding: 'utf8' });
      expect(other.stdout.trim()).toMatch(/^(EAGAIN|EACCES)$/);
      await setlk(fsExt.constants.F_UNLCK);
      expect(
        spawnSync(process.execPath, ['-e', probe, P('q.lock')], { cwd: ROOT, encoding: 'utf8' }).stdout.trim(),
      ).toBe('got');
      fs.closeSync(fd);

      // A holder killed by the cut lets go.
      const holder = spawnWorkload(['flock', '-x', 'q.lock', 'sleep', '60'], { cwd: pc.root });
      const until = Date.now() + 5000;
      while (spawnSync('flock', ['-n', P('q.lock'), 'true']).status === 0 && Date.now() < until) await sleep(10);
      expect(spawnSync('flock', ['-n', P('q.lock'), 'true']).status).toBe(1);
      await pc.cut();
      expect((await holder.exited).killed).toBe(true);
      expect(fs.existsSync(P('q.lock'))).toBe(false); // never made durable
      put('q.lock', '');
      expect(spawnSync('flock', ['-n', P('q.lock'), 'true']).status).toBe(0);
    });

    test('nested directories: each level keeps what its own fsync made durable', async () => {
      fs.mkdirSync(P('a/b/c'), { recursive: true });
      for (const d of ['a', 'a/b', 'a/b/c']) put(`${d}/f`, d, { fsync: true });
      fsyncDir();
      fsyncDir('a');
      fsyncDir('a/b/c'); // not a/b: c's name in b is not durable, and b is new: durably empty
      await pc.cut();
      expect(tree()).toEqual({ 'a/': '', 'a/f': 'a', 'a/b/': '' });

      fs.mkdirSync(P('x/y'), { recursive: true });
      put('x/y/f', 'deep', { fsync: true });
      fsyncDir('x/y');
      fsyncDir('x'); // root not fsynced: x is not there, and so neither is anything under it
      await pc.cut();
      expect(tree()).toEqual({ 'a/': '', 'a/f': 'a', 'a/b/': '' });

      // A durable directory renamed: the rename needs the fsync of the parent.
      fs.renameSync(P('a'), P('z'));
      await pc.cut();
      expect(Object.keys(tree())).toEqual(['a/', 'a/b/', 'a/f']);
      fs.renameSync(P('a'), P('z'));
      fsyncDir();
      await pc.cut();
      expect(tree()).toEqual({ 'z/': '', 'z/f': 'a', 'z/b/': '' });
    });

    test('directory renames that durably form a cycle: the cycle is broken, and counted', async () => {
      fs.mkdirSync(P('p'));
      fs.mkdirSync(P('c'));
      await pc.sync();
      fs.renameSync(P('p'), P('c/p'));
      fsyncDir('c'); // c durably holds p
      fs.renameSync(P('c/p'), P('p'));
      fs.renameSync(P('c'), P('p/c'));
      fsyncDir('p'); // p durably holds c; the root, never fsynced, durably holds both
      await pc.cut();
      expect(tree()).toEqual({ 'c/': '', 'c/p/': '', 'p/': '', 'p/c/': '' });
      expect((await pc.counters()).cycles).toBe(2);
    });

    test('hard links, symlinks, modes and owners pass through; copyFileSync works', async () => {
      put('f', 'F', { fsync: true });
      fs.linkSync(P('f'), P('g'));
      fs.symlinkSync('f', P('s'));
      fs.chmodSync(P('f'), 0o640);
      fs.copyFileSync(P('f'), P('copy'));
      expect(fs.statSync(P('f')).nlink).toBe(2);
      expect(fs.statSync(P('g')).mode & 0o777).toBe(0o640);
      expect(fs.readFileSync(P('s'), 'utf8')).toBe('F');
      expect(fs.readFileSync(P('copy'), 'utf8')).toBe('F');
      fsyncDir();
      await pc.cut();
      expect(tree()).toEqual({ copy: '', f: 'F', g: 'F', s: '-> f' }); // copy: never fsynced
      expect(fs.statSync(P('g')).ino).toBe(fs.statSync(P('f')).ino);
      expect(fs.statSync(P('f')).mode & 0o777).toBe(0o640);
      fs.unlinkSync(P('g'));
      expect(fs.statSync(P('f')).nlink).toBe(1); // the graveyard's link is not counted
    });

    test(
      'a workload runs as another user, and everything ' + 'it starts dies at the cut, even in a new session',
      async () => {
        fs.mkdirSync(P('spool'), { mode: 0o777 });
        fs.chmodSync(P('spool'), 0o777);
        fsyncDir();
        await pc.sync();
        const w = spawnWorkload(['sh', '-c', 'echo hi > mine; setsid sh -c "while :; do echo x >> f; done" & wait'], {
          cwd: P('spool'),
          uid: 65534,
          gid: 65534,
        });
        const until = Date.now() + 5000;
        while (!(fs.existsSync(P('spool/f')) && fs.statSync(P('spool/f')).size > 100) && Date.now() < until)
          await sleep(10);
        expect(fs.statSync(P('spool/mine')).uid).toBe(65534);
        expect(fs.statSync(P('spool/f')).size).toBeGreaterThan(100);
        expect(mountUsers(pc.root).length).toBeGreaterThanOrEqual(2); // sh, and the setsid loop
        await pc.cut();
        expect(w.running()).toBe(false);
        expect((await w.exited).killed).toBe(true);
        expect(mountUsers(pc.root)).toEqual([]);
        expect(tree()).toEqual({ 'spool/': '' });
        await sleep(100);
        expect(tree()).toEqual({ 'spool/': '' }); // nothing writes after the cut
      },
    );

    test('a process outside any workload that uses the mount is killed too (the safety net)', async () => {
      const child = spawnSync('sh', ['-c', `cd '${pc.root}' && (sleep 60 > held </dev/null 2>&1 &) ; echo started`], {
        encoding: 'utf8',
      });
      expect(child.stdout.trim()).toBe('started');
      expect(mountUsers(pc.root).length).toBe(1);
      await pc.cut();
      expect(mountUsers(pc.root)).toEqual([]);
    });

    test('descriptors opened before a cut are stale (EIO)', async () => {
      put('f', 'x', { fsync: true });
      fsyncDir();
      const fd = fs.openSync(P('f'), 'r');
      await pc.cut();
      expect(() => fs.readSync(fd, Buffer.alloc(4))).toThrow(/EIO/);
      fs.closeSync(fd);
      expect(fs.readFileSync(P('f'), 'utf8')).toBe('x');
    });

    test('50 cuts in a row under a workload stay fast and exact', async () => {
      fs.mkdirSync(P('jobs'));
      fs.mkdirSync(P('careless'));
      put('journal', '', { fsync: true });
      await pc.sync();
      // (careless writes go to a directory of their own: anyone's fsync of a directory makes all
      // its entries durable, the careless writer's too)
      const want: Record<string, string> = { 'jobs/': '', 'careless/': '' };
      let journal = '';
      const started = Date.now();
      for (let i = 0; i < 50; i++) {
        // A careless writer in the background, killed at the cut...
        spawnWorkload(['sh', '-c', `i=0; while :; do i=$((i+1)); echo $i > careless/${i}-$i; done`], { cwd: pc.root });
        // ...and careful writes and fsynced appends in the foreground.
        carefulWrite(`jobs/careful-${i}`, `job ${i}`);
        want[`jobs/careful-${i}`] = `job ${i}`;
        fs.appendFileSync(P('journal'), `commit ${i}\n`);
        const fd = fs.openSync(P('journal'), 'a');
        fs.fsyncSync(fd);
        fs.writeSync(fd, `uncommitted ${i}\n`);
        fs.closeSync(fd);
        journal += `commit ${i}\n`;
        await sleep(i % 5); // let the careless writer get some files in
        await pc.cut();
        expect(tree()).toEqual({ ...want, journal });
      }
      const c = await pc.counters();
      expect(c).toMatchObject({ cuts: 50, missing: 0, cycles: 0 });
      expect(fs.readdirSync(`/proc/${pc.pid}/fd`).length).toBeLessThan(20); // no descriptor leaks per cut
      expect(Date.now() - started).toBeLessThan(20_000);
    });
  },
);
