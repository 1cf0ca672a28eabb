/**
 * sys/untrusted.ts: files where someone else may write, against the moves an attacker makes there
 * (a symbolic link, a hard link, a FIFO, a file swapped between a check and a use). As root, the
 * owner checks are tried with a second user's files too.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UntrustedFileError } from '../../src/base/errors.js';
import { SeqFile } from '../../src/lowlevel.js';
import { runBatch, runBatchSync } from '../../src/sys/fs-batch.js';
import {
  CREATE_NEW,
  claimFile,
  createFresh,
  openExisting,
  openOwnFile,
  removeTree,
  writeFresh,
} from '../../src/sys/untrusted.js';
import { tempDir } from '../helpers.js';

const isRoot = process.getuid?.() === 0;
/** nobody's uid where the tests run as root (a file "of another user"). */
const NOBODY = 65534;

/** A victim file outside the directory under attack, and its bytes. */
function victim(dir: string): { path: string; bytes: string } {
  const p = path.join(dir, 'victim');
  fs.writeFileSync(p, 'precious\n', { mode: 0o600 });
  return { path: p, bytes: 'precious\n' };
}

describe('a file made new', () => {
  it('replaces a planted symbolic link or hard link, never writing through it', () => {
    const dir = tempDir();
    const v = victim(dir);
    const sym = path.join(dir, 'a.temp');
    fs.symlinkSync(v.path, sym);
    writeFresh(sym, 'mine\n', 0o644);
    const hard = path.join(dir, 'b.temp');
    fs.linkSync(v.path, hard);
    writeFresh(hard, 'mine\n', 0o644);
    expect(fs.readFileSync(v.path, 'utf8')).toBe(v.bytes);
    for (const p of [sym, hard]) {
      expect(fs.lstatSync(p).isFile()).toBe(true);
      expect(fs.readFileSync(p, 'utf8')).toBe('mine\n');
    }
  });

  it('replaces a dangling link and a FIFO, making nothing where the link points (each way of making one)', async () => {
    const dir = tempDir();
    const elsewhere = path.join(tempDir(), 'made-through-the-link');
    const plant = (name: string, kind: 'link' | 'fifo') => {
      const p = path.join(dir, name);
      if (kind === 'link') fs.symlinkSync(elsewhere, p);
      else execFileSync('mkfifo', [p]);
      return p;
    };
    const op = (p: string) =>
      ({
        op: 'writeFile',
        path: p,
        flags: CREATE_NEW,
        mode: 0o644,
        data: Buffer.from('7\n'),
        replace: true,
        must: true,
      }) as const;
    for (const kind of ['link', 'fifo'] as const) {
      const a = plant(`a-${kind}`, kind);
      writeFresh(a, '7\n', 0o644);
      const b = plant(`b-${kind}`, kind);
      expect((await runBatch([op(b)]))[0]).toBe(0);
      const c = plant(`c-${kind}`, kind);
      expect(runBatchSync([op(c)])[0]).toBe(0);
      for (const p of [a, b, c]) {
        expect(fs.lstatSync(p).isFile()).toBe(true);
        expect(fs.readFileSync(p, 'utf8')).toBe('7\n');
      }
    }
    expect(fs.existsSync(elsewhere)).toBe(false);
  });

  it('gets the owner and exact mode it is given, through its descriptor', () => {
    if (!isRoot) return;
    const dir = tempDir();
    const fd = createFresh(path.join(dir, 'f'), 0o644, { uid: NOBODY, gid: NOBODY, mode: 0o660 });
    fs.closeSync(fd);
    const st = fs.statSync(path.join(dir, 'f'));
    expect([st.uid, st.gid, st.mode & 0o7777]).toEqual([NOBODY, NOBODY, 0o660]);
  });

  it('in a batch too (the native addon or its fallback): replace removes the link first', async () => {
    const dir = tempDir();
    const v = victim(dir);
    const temp = path.join(dir, 'nextseq.temp');
    fs.symlinkSync(v.path, temp);
    const r = await runBatch([
      {
        op: 'writeFile',
        path: temp,
        flags: CREATE_NEW,
        mode: 0o644,
        data: Buffer.from('7\n'),
        replace: true,
        must: true,
      },
    ]);
    expect(r[0]).toBe(0);
    expect(fs.readFileSync(v.path, 'utf8')).toBe(v.bytes);
    expect(fs.readFileSync(temp, 'utf8')).toBe('7\n');
  });

  it("a batch's writeFileFrom refuses a source that is a link", async () => {
    const dir = tempDir();
    const v = victim(dir);
    const staged = path.join(dir, 'f.out-x');
    fs.symlinkSync(v.path, staged);
    const out = path.join(dir, 'token.part');
    const r = await runBatch([
      {
        op: 'writeFileFrom',
        path: out,
        flags: CREATE_NEW,
        mode: 0o644,
        data: Buffer.from('H'),
        from: staged,
        must: true,
      },
    ]);
    expect(r[0]).toBeLessThan(0);
    expect(fs.readFileSync(out, 'utf8')).not.toContain('precious');
  });
});

describe('a file opened as it is', () => {
  it('refuses a symbolic link, a FIFO, and (where asked) a hard link or another owner', () => {
    const dir = tempDir();
    const v = victim(dir);
    fs.symlinkSync(v.path, path.join(dir, 'sym'));
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    fs.linkSync(v.path, path.join(dir, 'hard'));
    expect(() => openExisting(path.join(dir, 'sym'))).toThrow(/Refusing .*sym: it is a symbolic link/);
    expect(() => openExisting(path.join(dir, 'fifo'))).toThrow(/it is not a regular file/);
    expect(() => openExisting(path.join(dir, 'hard'), fs.constants.O_RDONLY, { singleLink: true })).toThrow(
      /2 names \(a hard link\)/,
    );
    expect(() => openExisting(v.path, fs.constants.O_RDONLY, { uid: 12345 })).toThrow(UntrustedFileError);
    const { fd } = openExisting(v.path);
    fs.closeSync(fd);
  });

  it("openOwnFile (saveboth): empties a file of ours, refuses a link or another's file", () => {
    const dir = tempDir();
    const v = victim(dir);
    const out = path.join(dir, 'job.out');
    fs.writeFileSync(out, 'old output');
    fs.closeSync(openOwnFile(out, 0o666));
    expect(fs.readFileSync(out, 'utf8')).toBe('');
    fs.rmSync(out);
    fs.symlinkSync(v.path, out);
    expect(() => openOwnFile(out, 0o666)).toThrow(UntrustedFileError);
    expect(fs.readFileSync(v.path, 'utf8')).toBe(v.bytes);
    if (isRoot) {
      const theirs = path.join(dir, 'theirs.out');
      fs.writeFileSync(theirs, 'x');
      fs.chownSync(theirs, NOBODY, NOBODY);
      expect(() => openOwnFile(theirs, 0o666)).toThrow(/belongs to uid 65534/);
    }
  });
});

describe('a file claimed from another user', () => {
  it("takes a regular file of theirs; refuses a link, a FIFO, or a file that isn't theirs", () => {
    if (!isRoot) return;
    const dir = tempDir();
    const v = victim(dir);
    const out = path.join(dir, 'out');
    fs.mkdirSync(out);
    const mine = path.join(dir, 'claimed');
    fs.writeFileSync(path.join(out, 'good'), 'output');
    fs.chownSync(path.join(out, 'good'), NOBODY, NOBODY);
    expect(claimFile(path.join(out, 'good'), mine, NOBODY)).toBe(true);
    expect(fs.readFileSync(mine, 'utf8')).toBe('output');
    expect(claimFile(path.join(out, 'missing'), `${mine}2`, NOBODY)).toBe(false);
    fs.symlinkSync(v.path, path.join(out, 'sym'));
    expect(() => claimFile(path.join(out, 'sym'), `${mine}3`, NOBODY)).toThrow(/symbolic link/);
    fs.linkSync(v.path, path.join(out, 'hard')); // root's file, hard linked into their directory
    expect(() => claimFile(path.join(out, 'hard'), `${mine}4`, NOBODY)).toThrow(/belongs to uid 0/);
    expect(fs.existsSync(`${mine}3`) || fs.existsSync(`${mine}4`)).toBe(false);
  });
});

describe('a tree removed', () => {
  it('does not follow a link or a directory swapped for one inside a directory another user may write', () => {
    const dir = tempDir();
    const keep = path.join(dir, 'keep');
    fs.mkdirSync(keep);
    fs.writeFileSync(path.join(keep, 'precious'), 'x');
    const staging = path.join(dir, 'staging');
    const firing = path.join(staging, 'f1');
    const out = path.join(firing, 'out');
    fs.mkdirSync(out, { recursive: true });
    fs.chmodSync(out, 0o777); // writable by others, as a user's out/ is
    fs.symlinkSync(keep, path.join(out, 'link'));
    fs.mkdirSync(path.join(out, 'sub'));
    fs.symlinkSync(keep, path.join(out, 'sub', 'deeper'));
    fs.writeFileSync(path.join(firing, 'f.stderr'), 'e');
    removeTree(firing);
    expect(fs.existsSync(firing)).toBe(false);
    expect(fs.readdirSync(staging)).toEqual([]);
    expect(fs.readFileSync(path.join(keep, 'precious'), 'utf8')).toBe('x');
  });

  it('never throws: directories nested deeper than it goes are left for later', () => {
    const dir = tempDir();
    const firing = path.join(dir, 'staging', 'f1');
    let p = path.join(firing, 'out');
    fs.mkdirSync(p, { recursive: true });
    fs.chmodSync(p, 0o777);
    for (let i = 0; i < 200; i++) {
      p = path.join(p, 'd');
      fs.mkdirSync(p);
      fs.chmodSync(p, 0o777);
    }
    expect(() => removeTree(firing)).not.toThrow();
  });
});

describe('seqfiles in a directory others may write', () => {
  it("a planted nextseq.temp link is replaced, not followed; the lock file can't be a link", () => {
    const dir = tempDir();
    const v = victim(dir);
    const q = path.join(dir, 'q');
    fs.mkdirSync(q);
    fs.writeFileSync(path.join(q, 'nextseq'), '1\n');
    fs.writeFileSync(path.join(q, 'nextseq.lock'), '');
    fs.symlinkSync(v.path, path.join(q, 'nextseq.temp'));
    SeqFile.with(path.join(q, 'nextseq'), {}, (sf) => sf.write(2n));
    expect(fs.readFileSync(v.path, 'utf8')).toBe(v.bytes);
    expect(fs.readFileSync(path.join(q, 'nextseq'), 'utf8')).toBe('2\n');
    fs.rmSync(path.join(q, 'nextseq.lock'));
    fs.symlinkSync(v.path, path.join(q, 'nextseq.lock'));
    expect(() => SeqFile.with(path.join(q, 'nextseq'), {}, () => {})).toThrow(/nextseq.lock: it is a symbolic link/);
    expect(fs.readFileSync(v.path, 'utf8')).toBe(v.bytes);
  });

  it("root replacing another user's seqfile keeps its owner, group and mode", () => {
    if (!isRoot) return;
    const dir = tempDir();
    const seq = path.join(dir, 'sendseq');
    fs.writeFileSync(seq, '5\n');
    fs.chownSync(seq, NOBODY, NOBODY);
    fs.chmodSync(seq, 0o660);
    SeqFile.with(seq, { create: true }, (sf) => sf.take());
    const st = fs.statSync(seq);
    expect([fs.readFileSync(seq, 'utf8'), st.uid, st.gid, st.mode & 0o7777]).toEqual(['6\n', NOBODY, NOBODY, 0o660]);
  });
});
