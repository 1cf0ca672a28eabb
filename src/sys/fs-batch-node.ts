/**
 * fs-batch.ts's operations through Node's fs API, one after the other: the path without the
 * native addon (or with FSPL_NO_NATIVE=1), with the same results.
 */
import fs from 'node:fs';
import util from 'node:util';
import { cannotSync, fsyncDir } from './durable.js';
import { type BatchOp, errnoResult, type FsOp, type NewFile, stops } from './fs-ops.js';
import { closeQuietly, writeAllSync } from './io.js';
import { createFresh } from './untrusted.js';

// ------------------------------------------------------------------------------------------------
// The pure-Node fallback

export async function fallback(ops: readonly BatchOp[]): Promise<Int32Array> {
  const out = new Int32Array(ops.length).fill(errnoResult('ECANCELED'));
  for (let i = 0; i < ops.length; i++) {
    out[i] = await runOne(ops[i]!).catch(errnoOf);
    if (stops(ops[i]!, out[i]!)) break;
  }
  return out;
}

/** A failed operation's result: its -errno (EIO if it has none). */
function errnoOf(err: unknown): number {
  const errno = (err as NodeJS.ErrnoException).errno;
  return typeof errno === 'number' && errno < 0 ? errno : errnoResult('EIO');
}

const open = util.promisify(fs.open);
const fsync = util.promisify(fs.fsync);
const close = util.promisify(fs.close);
const write = util.promisify(fs.write);

async function runOne(o: FsOp): Promise<number> {
  switch (o.op) {
    case 'fsyncDir':
      try {
        if (o.fd !== undefined) {
          await fsync(o.fd);
          return 0;
        }
        return await withFd(await open(o.path, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY), async (fd) =>
          fsync(fd),
        );
      } catch (err) {
        if (cannotSync(err)) return 0; // as fsyncDir does
        throw err;
      }
    case 'fsync':
      await fsync(o.fd);
      return 0;
    case 'rename':
      await fs.promises.rename(o.from, o.to);
      return 0;
    case 'unlink':
      await fs.promises.unlink(o.path);
      return 0;
    case 'open':
      return open(o.path, o.flags, o.mode);
    case 'writeFile':
      return withFd(await openNew(o), (fd) => writeAllAndSync(fd, o.data));
    case 'append':
      await writeAllAndSync(o.fd, o.data);
      return 0;
    case 'writeFileFrom':
      return withFd(await openNew(o), async (fd) => {
        await writeAll(fd, o.data);
        await copyFileInto(o.from, fd);
        await fsync(fd);
      });
    case 'close':
      await close(o.fd);
      return 0;
    case 'pwrite':
      for (let done = 0; done < o.data.length; )
        done += (await write(o.fd, o.data, done, o.data.length - done, o.position + done)).bytesWritten;
      if (o.datasync) await util.promisify(fs.fdatasync)(o.fd);
      return 0;
  }
}

/** A writeFile's file, made as the operation says (replace, owner: untrusted.ts). */
async function openNew(o: { path: string; flags: number; mode: number } & NewFile): Promise<number> {
  // On the pool: the fallback of an asynchronous batch keeps the event loop free of its calls.
  if (!o.replace) return withOwner(await open(o.path, o.flags, o.mode), o);
  return openNewSync(o);
}

/** A writeFile's file: with `replace`, as untrusted.ts's createFresh makes it (its owner too). */
function openNewSync(o: { path: string; flags: number; mode: number } & NewFile): number {
  if (o.replace) return createFresh(o.path, o.mode, o.owner, o.flags);
  return withOwner(fs.openSync(o.path, o.flags, o.mode), o);
}

function withOwner(fd: number, o: NewFile): number {
  if (!o.owner) return fd;
  try {
    fs.fchownSync(fd, o.owner.uid, o.owner.gid);
    fs.fchmodSync(fd, o.owner.mode);
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
  return fd;
}

async function writeAll(fd: number, data: Buffer): Promise<void> {
  for (let done = 0; done < data.length; ) done += (await write(fd, data, done, data.length - done)).bytesWritten;
}

async function writeAllAndSync(fd: number, data: Buffer): Promise<void> {
  await writeAll(fd, data);
  await fsync(fd);
}

/** Append all of the file `from` to fd. */
async function copyFileInto(from: string, fd: number): Promise<void> {
  const src = await fs.promises.open(from, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    if (!(await src.stat()).isFile())
      throw Object.assign(new Error(`${from} is not a regular file`), {
        code: 'EINVAL',
        errno: errnoResult('EINVAL'),
      });
    const buf = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      const { bytesRead } = await src.read(buf, 0, buf.length, null);
      if (bytesRead === 0) return;
      await writeAll(fd, buf.subarray(0, bytesRead));
    }
  } finally {
    await src.close();
  }
}

/** Run fn on fd, then close it (a failed close after a failed fn: fn's error). */
async function withFd(fd: number, fn: (fd: number) => Promise<void>): Promise<number> {
  try {
    await fn(fd);
  } catch (err) {
    await close(fd).catch(() => {});
    throw err;
  }
  await close(fd);
  return 0;
}

// ------------------------------------------------------------------------------------------------
// The pure-Node fallback of runBatchSync

export function fallbackSync(ops: readonly BatchOp[]): Int32Array {
  const out = new Int32Array(ops.length).fill(errnoResult('ECANCELED'));
  for (let i = 0; i < ops.length; i++) {
    try {
      out[i] = runOneSync(ops[i]!);
    } catch (err) {
      out[i] = errnoOf(err);
    }
    if (stops(ops[i]!, out[i]!)) break;
  }
  return out;
}

/** One operation through Node's synchronous calls (the operations runBatchSync's callers use, and the rest). */
function runOneSync(o: FsOp): number {
  switch (o.op) {
    case 'fsyncDir':
      if (o.fd === undefined) fsyncDir(o.path);
      else fsyncHeldDir(o.fd);
      return 0;
    case 'fsync':
      fs.fsyncSync(o.fd);
      return 0;
    case 'rename':
      fs.renameSync(o.from, o.to);
      return 0;
    case 'unlink':
      fs.unlinkSync(o.path);
      return 0;
    case 'open':
      return fs.openSync(o.path, o.flags, o.mode);
    case 'close':
      fs.closeSync(o.fd);
      return 0;
    case 'writeFile':
    case 'writeFileFrom': {
      const fd = openNewSync(o);
      try {
        writeAllSync(fd, o.data);
        if (o.op === 'writeFileFrom') copyFileIntoSync(o.from, fd);
        fs.fsyncSync(fd);
      } catch (err) {
        closeQuietly(fd);
        throw err;
      }
      fs.closeSync(fd);
      return 0;
    }
    case 'append':
      writeAllSync(o.fd, o.data);
      fs.fsyncSync(o.fd);
      return 0;
    case 'pwrite':
      for (let done = 0; done < o.data.length; )
        done += fs.writeSync(o.fd, o.data, done, o.data.length - done, o.position + done);
      if (o.datasync) fs.fdatasyncSync(o.fd);
      return 0;
  }
}

/** fsync a directory the caller holds open; one that cannot be fsynced at all succeeds (as fsyncDir). */
function fsyncHeldDir(fd: number): void {
  try {
    fs.fsyncSync(fd);
  } catch (err) {
    if (!cannotSync(err)) throw err;
  }
}

/** Append all of the file `from` to fd. */
function copyFileIntoSync(from: string, fd: number): void {
  const src = fs.openSync(from, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    if (!fs.fstatSync(src).isFile())
      throw Object.assign(new Error(`${from} is not a regular file`), {
        code: 'EINVAL',
        errno: errnoResult('EINVAL'),
      });
    const buf = Buffer.allocUnsafe(64 * 1024);
    for (let n: number; (n = fs.readSync(src, buf, 0, buf.length, null)) > 0; ) writeAllSync(fd, buf.subarray(0, n));
  } finally {
    closeQuietly(src);
  }
}
