/**
 * Writing a job into a queue's jobs/, as `queue-write` does: under a temporary name
 * (tmp-fspl-UUID.fspl.tmp, which no reader takes for a job), fsynced, renamed to fspl-UUID.fspl,
 * and jobs/ fsynced: a job file only ever appears complete, and once the call returns it is there
 * to stay (a sender told "written" may delete its copy). On any failure (a full disk, an I/O
 * error) the temporary file is removed and no job is stored: should the fsync of jobs/ after the
 * rename fail, the job is not durable, and the sender, told so, will send it again; the renamed
 * file is removed too, so that the second copy does not double it.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { v4 as uuidv4 } from 'uuid';
import { namePath } from '../base/errors.js';
import { fsyncDir, fsyncDirAsync } from '../sys/durable.js';
import { closeQuietly, fsyncSync, unlinkQuietly, writeAllAsync } from '../sys/io.js';

/** Errors of the file system (full, or failing): a failed write then names the queue's jobs/. */
const PLACE_ERRORS = ['ENOSPC', 'EDQUOT', 'EFBIG', 'EIO'] as const;

const CREATE = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL;

function names(id = uuidv4()): { temp: string; filename: string } {
  return { temp: `tmp-fspl-${id}.fspl.tmp`, filename: `fspl-${id}.fspl` };
}

/** A disk's failure names DIR/jobs ("No space left on device: DIR/jobs"); other errors keep their own wording. */
function placeWriteError(err: unknown, jobsDir: string): unknown {
  return namePath(err, jobsDir, PLACE_ERRORS);
}

/** After a failure: the temporary file goes, and the job if it was renamed in (not durable, not acknowledged). */
function takeBack(tempPath: string, finalPath: string | undefined): void {
  unlinkQuietly(tempPath);
  if (finalPath !== undefined) unlinkQuietly(finalPath);
}

/**
 * Write a job whose bytes `fill` writes to a descriptor; returns its file name (fspl-ID.fspl:
 * `id` when given, one a transfer's journal named before, transfer.ts).
 */
export function writeJobSync(jobsDir: string, fill: (fd: number) => void, id?: string): string {
  const { temp, filename } = names(id);
  const tempPath = `${jobsDir}/${temp}`;
  let fd: number | undefined;
  let renamed: string | undefined;
  try {
    fd = fs.openSync(tempPath, CREATE, 0o666);
    fill(fd);
    fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(tempPath, `${jobsDir}/${filename}`);
    renamed = `${jobsDir}/${filename}`;
    // The rename is durable only once jobs/ is fsynced; a sender told "written" (queue-write
    // exits 0, an ssh pipe closes) may delete its copy, so this comes before we return.
    fsyncDir(jobsDir);
  } catch (err) {
    closeQuietly(fd);
    takeBack(tempPath, renamed);
    throw placeWriteError(err, jobsDir);
  }
  return filename;
}

/** Write a job from bytes or a stream (any async iterable of bytes), off the event loop; resolves to its file name. */
export async function writeJob(
  jobsDir: string,
  packet: Readable | Uint8Array | AsyncIterable<Uint8Array>,
): Promise<string> {
  const { temp, filename } = names();
  const tempPath = `${jobsDir}/${temp}`;
  let handle: fs.promises.FileHandle | undefined;
  let renamed: string | undefined;
  try {
    handle = await fs.promises.open(tempPath, CREATE, 0o666);
    if (packet instanceof Uint8Array) await writeAllAsync(handle, packet);
    else for await (const chunk of packet) await writeAllAsync(handle, chunk as Uint8Array);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await fs.promises.rename(tempPath, `${jobsDir}/${filename}`);
    renamed = `${jobsDir}/${filename}`;
    // Only now is the job there to stay: a sender told "written" may delete its copy.
    await fsyncDirAsync(jobsDir);
  } catch (err) {
    await handle?.close().catch(() => {});
    takeBack(tempPath, renamed);
    if (!(packet instanceof Uint8Array)) (packet as Partial<Readable>).destroy?.(); // a stream
    throw placeWriteError(err, jobsDir);
  }
  return filename;
}
