/**
 * src/sys/copy.ts: payload copies between descriptors, through the kernel (the native addon's
 * splice/copy_file_range) and through the read/write loop (FSPL_NO_NATIVE=1, or a per-chunk
 * hook), for every kind of pair the CLI meets: file to file, pipe to file, file to pipe, pipe to
 * pipe, and ends the kernel refuses (O_APPEND). And the four commands that copy, end to end.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copy } from '../../src/sys/copy.js';
import { readUpToSync } from '../../src/sys/io.js';
import { loadNative, nativeCopy } from '../../src/sys/native.js';
import { FSPL_BIN, tempDir } from '../helpers.js';

const saved = process.env.FSPL_NO_NATIVE;
afterEach(() => {
  if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
  else process.env.FSPL_NO_NATIVE = saved;
});

function setNative(on: boolean): void {
  if (on) delete process.env.FSPL_NO_NATIVE;
  else process.env.FSPL_NO_NATIVE = '1';
}

delete process.env.FSPL_NO_NATIVE;
const HAVE_NATIVE = loadNative() !== undefined;
if (saved !== undefined) process.env.FSPL_NO_NATIVE = saved;

/** 3 MiB + 17 bytes of a non-repeating pattern: several chunks and a short last one. */
function pattern(n = 3 * 1024 * 1024 + 17): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 7 + (i >> 11)) & 0xff;
  return b;
}
const DATA = pattern();

/** A FIFO whose other end a child process holds: `cat` feeding it from `src`, or draining it into `dst`. */
function fifo(dir: string, mode: 'feed' | 'drain', file: string): { path: string; done: Promise<number | null> } {
  const p = path.join(dir, `fifo-${mode}`);
  spawnSync('mkfifo', [p]);
  const script = mode === 'feed' ? 'cat "$1" > "$2"' : 'cat "$2" > "$1"';
  const child = spawn('sh', ['-c', script, 'sh', file, p], { stdio: 'ignore' });
  return { path: p, done: new Promise((resolve) => child.once('exit', resolve)) };
}

const modes = [
  ['through the kernel (native addon)', true],
  ['through the read/write loop (FSPL_NO_NATIVE=1)', false],
] as const;

describe.each(modes)('copy %s', (_name, native) => {
  beforeEach(() => {
    if (native && !HAVE_NATIVE) console.warn('native addon not built: the kernel path is the loop here');
    setNative(native);
  });

  it('file to file, from the input position, to the end', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'w');
    readUpToSync(inFd, 17);
    fs.writeSync(outFd, 'head:');
    expect(copy(inFd, outFd)).toBe(DATA.length - 17);
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect(
      fs.readFileSync(path.join(dir, 'dst')).equals(Buffer.concat([Buffer.from('head:'), DATA.subarray(17)])),
    ).toBe(true);
  });

  it('stops at a limit, leaving the input positioned just after it', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'w');
    const limit = 1024 * 1024 + 5;
    expect(copy(inFd, outFd, { limit })).toBe(limit);
    expect(readUpToSync(inFd, 3).equals(DATA.subarray(limit, limit + 3))).toBe(true);
    expect(copy(inFd, outFd, { limit: DATA.length })).toBe(DATA.length - limit - 3); // input ends first
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    const out = fs.readFileSync(path.join(dir, 'dst'));
    expect(out.equals(Buffer.concat([DATA.subarray(0, limit), DATA.subarray(limit + 3)]))).toBe(true);
  });

  it('pipe to file (a FIFO fed by another process)', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    const f = fifo(dir, 'feed', path.join(dir, 'src'));
    const inFd = fs.openSync(f.path, 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'w');
    expect(copy(inFd, outFd)).toBe(DATA.length);
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect(await f.done).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'dst')).equals(DATA)).toBe(true);
  });

  it('file to pipe (a FIFO drained by another process)', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    const f = fifo(dir, 'drain', path.join(dir, 'dst'));
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const outFd = fs.openSync(f.path, 'w');
    expect(copy(inFd, outFd)).toBe(DATA.length);
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect(await f.done).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'dst')).equals(DATA)).toBe(true);
  });

  it('pipe to pipe', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    const feed = fifo(dir, 'feed', path.join(dir, 'src'));
    const drain = fifo(dir, 'drain', path.join(dir, 'dst'));
    const inFd = fs.openSync(feed.path, 'r');
    const outFd = fs.openSync(drain.path, 'w');
    expect(copy(inFd, outFd)).toBe(DATA.length);
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect([await feed.done, await drain.done]).toEqual([0, 0]);
    expect(fs.readFileSync(path.join(dir, 'dst')).equals(DATA)).toBe(true);
  });

  it('into a file opened O_APPEND (splice and copy_file_range refuse it; the loop takes over)', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    fs.writeFileSync(path.join(dir, 'dst'), 'before:');
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'a');
    expect(copy(inFd, outFd)).toBe(DATA.length);
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect(fs.readFileSync(path.join(dir, 'dst')).equals(Buffer.concat([Buffer.from('before:'), DATA]))).toBe(true);
  });

  it('an empty input copies nothing', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), '');
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'w');
    expect(copy(inFd, outFd)).toBe(0);
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect(fs.statSync(path.join(dir, 'dst')).size).toBe(0);
  });

  it('reports a write error as Node does (here EBADF: the output is read-only)', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    fs.writeFileSync(path.join(dir, 'dst'), '');
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'r');
    try {
      expect(() => copy(inFd, outFd)).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'write' }));
    } finally {
      fs.closeSync(inFd);
      fs.closeSync(outFd);
    }
  });
});

describe('copy with a per-chunk hook', () => {
  it('passes every byte through the hook, in order, in chunks of a reused buffer', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'w');
    const seen: Buffer[] = [];
    const views = new Set<ArrayBufferLike>();
    expect(copy(inFd, outFd, { onChunk: (c) => (seen.push(Buffer.from(c)), views.add(c.buffer)) })).toBe(DATA.length);
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect(Buffer.concat(seen).equals(DATA)).toBe(true);
    expect(seen.length).toBeGreaterThan(1);
    expect(views.size).toBe(1);
    expect(fs.readFileSync(path.join(dir, 'dst')).equals(DATA)).toBe(true);
  });
});

describe.runIf(HAVE_NATIVE)('nativeCopy (the addon itself)', () => {
  beforeEach(() => setNative(true));

  it('moves file to file inside the kernel and stops at a 0 return', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'w');
    expect(nativeCopy(inFd, outFd)).toEqual({ copied: DATA.length, errno: 0 });
    expect(nativeCopy(inFd, outFd, 10)).toEqual({ copied: 0, errno: 0 });
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect(fs.readFileSync(path.join(dir, 'dst')).equals(DATA)).toBe(true);
  });

  it('refuses with an errno, having moved nothing, where the kernel cannot (O_APPEND, a terminal-like device)', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'src'), DATA);
    const inFd = fs.openSync(path.join(dir, 'src'), 'r');
    const appendFd = fs.openSync(path.join(dir, 'dst'), 'a');
    const nullFd = fs.openSync('/dev/null', 'w');
    try {
      const a = nativeCopy(inFd, appendFd)!;
      expect(a.copied).toBe(0);
      expect(a.errno).toBeGreaterThan(0);
      expect(nativeCopy(inFd, nullFd)).toEqual({ copied: 0, errno: 22 }); // EINVAL: not a pipe or a file
    } finally {
      for (const fd of [inFd, appendFd, nullFd]) fs.closeSync(fd);
    }
  });
});

describe.each(modes)('the commands that copy payloads, end to end, %s', (_name, native) => {
  it('prepare | queue-write, queue-payload to a file and to a pipe, stdin-payload', () => {
    const dir = tempDir();
    const src = path.join(dir, 'payload');
    fs.writeFileSync(src, DATA);
    const env = { ...process.env, FSPL_NO_NATIVE: native ? '' : '1', FSPL: `${process.execPath} ${FSPL_BIN}` };
    const script = [
      'set -e -o pipefail',
      '$FSPL queue-init -q q',
      // prepare: a pipe into a pipe, and a file into a pipe
      'cat payload | $FSPL prepare -s seq -i - | $FSPL queue-write -q q',
      '$FSPL prepare -s seq -i payload > packet',
      // queue-write from a file (file to file), stdin-payload from a file and from a pipe
      '$FSPL queue-write -q q < packet',
      '$FSPL stdin-payload < packet > out-stdin-file',
      'cat packet | $FSPL stdin-payload | cat > out-stdin-pipe',
      // queue-payload into a file and into a pipe
      '$FSPL queue-payload -q q -j 1 > out-q1-file',
      '$FSPL queue-payload -q q -j 2 | cat > out-q2-pipe',
    ].join('\n');
    const r = spawnSync('bash', ['-c', script], { cwd: dir, env, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const out of ['out-stdin-file', 'out-stdin-pipe', 'out-q1-file', 'out-q2-pipe']) {
      expect(fs.readFileSync(path.join(dir, out)).equals(DATA), out).toBe(true);
    }
  });
});
