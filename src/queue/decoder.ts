/**
 * Decoder pipelines: `$SHELL -c DECODER` (or /bin/sh) reads the stored job file on stdin and
 * writes the packet on stdout. Used for compressed or encrypted queues (zcat, gpg -d, age -d).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { DecoderError, HeaderTooLargeError } from '../base/errors.js';
import { checkSeconds, setLongTimeout } from '../base/timer.js';
import { readHeaderFromStream } from '../packet/read.js';
import type { PacketHeader } from '../packet/types.js';
import { spawnTalking } from '../sys/exec.js';
import { closeQuietly } from '../sys/io.js';
import { openSpoolSync } from '../sys/spool.js';
import { openJobFile } from '../sys/untrusted.js';
import type { DecodedJob, ExitStatus } from './types.js';

export type { DecodedJob, ExitStatus } from './types.js';

const write = promisify(fs.write);

export function decoderShell(): string {
  return process.env.SHELL || '/bin/sh';
}

function describeExit(s: ExitStatus): string {
  return s.signal ? `was killed by signal ${s.signal}` : `exited with status ${s.code}`;
}

export function decoderFailure(decoder: string, s: ExitStatus): DecoderError {
  return new DecoderError(`Decoder ${JSON.stringify(decoder)} ${describeExit(s)}`);
}

/** After SIGTERM, how long a decoder has to exit before SIGKILL. */
const KILL_GRACE_MS = 1000;
/** How long a decoder that has closed its output may take to exit before it is killed. */
const EXIT_GRACE_MS = 5000;

/**
 * Start the decoder on a job file and read the packet header from its output. With `timeout`
 * (seconds), a decoder that gives no complete header in time is killed (DecoderError, `timedOut`).
 * It leads a session of its own and is stopped as a group, so a pipeline (`-d 'gpg -d | zcat'`)
 * never outlives what it was started for, and a job's decoder is out of our process group as its
 * command is (exec.ts). Metadata longer than `maxHeaderSize` is not read (HeaderTooLargeError).
 * `file` may be a descriptor of the caller's (stdin-process -d), which the caller keeps.
 * One function on purpose: the child, its kill timer and the `aborted` flag are shared by
 * abort(), the timeout and the returned DecodedJob's getter.
 */
export async function openThroughDecoder(
  file: string | number,
  decoder: string,
  timeout?: number,
  maxHeaderSize?: number,
): Promise<DecodedJob> {
  checkSeconds(timeout, 'openThroughDecoder: timeout');
  // Not hanging on a FIFO named like a job, nor through a link planted in jobs/ (untrusted.ts).
  const fd = typeof file === 'number' ? file : openJobFile(file);
  let child: ChildProcess;
  try {
    child = spawnTalking(decoderShell(), ['-c', decoder], [fd, 'pipe', 'inherit'], undefined, true);
  } finally {
    if (typeof file !== 'number') closeQuietly(fd); // the child has its own copy
  }
  let killTimer: NodeJS.Timeout | undefined;
  const running = () => child.exitCode === null && child.signalCode === null;
  // The whole group: the shell and whatever it started (a pipeline's other commands).
  const kill = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      child.kill(signal); // the group is gone already (or never was): the child alone, if still there
    }
  };
  let aborted = false;
  const killLater = (ms: number) => {
    killTimer ??= setTimeout(() => {
      if (!running()) return;
      // Killed by us: its exit status then says nothing about the job (the command's decides).
      aborted = true;
      kill('SIGKILL');
    }, ms).unref();
  };
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('error', () => resolve({ code: 127, signal: null }));
    child.once('close', (code, signal) => {
      if (killTimer) clearTimeout(killTimer);
      resolve({ code, signal });
    });
  });
  const payload = child.stdout!;
  const abort = () => {
    if (payload.readableEnded) {
      // All its output was read: let it exit by itself, but not wait for ever.
      if (running()) killLater(EXIT_GRACE_MS);
      return;
    }
    // Its output was not read to the end (whether or not it has exited already, killed by a
    // broken pipe say): its exit status then says nothing about the job.
    aborted = true;
    // Signal first: a decoder that meets a closed socket first may complain and exit 1. One
    // that ignores SIGTERM gets SIGKILL a moment later, so that nobody waits on it for ever. The
    // group even when the shell has exited: a pipeline's other commands may still hold on.
    kill('SIGTERM');
    if (running()) killLater(KILL_GRACE_MS);
    payload.destroy();
  };
  let timedOut = false;
  const cancelTimer =
    timeout === undefined
      ? undefined
      : setLongTimeout(() => {
          timedOut = true;
          kill('SIGKILL');
          payload.destroy(); // a grandchild may still hold the pipe open
        }, timeout * 1000);
  try {
    const header = await readHeaderFromStream(payload, maxHeaderSize);
    if (timedOut) throw new Error('timed out');
    return {
      header,
      payload,
      exited,
      abort,
      get aborted() {
        return aborted;
      },
    };
  } catch (err) {
    abort();
    const status = await exited;
    if (timedOut) {
      throw new DecoderError(
        `Decoder ${JSON.stringify(decoder)} gave no header within ${timeout} s ` +
          `for ${typeof file === 'number' ? `descriptor ${file}` : file}; killed it`,
        { timedOut: true },
      );
    }
    if (status.code !== 0 && status.signal !== 'SIGTERM' && !(err instanceof HeaderTooLargeError)) {
      throw new DecoderError(`${(err as Error).message} (decoder ${describeExit(status)})`);
    }
    throw err;
  } finally {
    cancelTimer?.();
  }
}

/** Read only the header of a job file through the decoder, then stop the decoder. */
export async function readHeaderThroughDecoder(
  file: string,
  decoder: string,
  timeout?: number,
  maxHeaderSize?: number,
): Promise<PacketHeader> {
  const job = await openThroughDecoder(file, decoder, timeout, maxHeaderSize);
  job.abort();
  return job.header;
}

/**
 * The payload of a decoded job as a stream that ends only once the decoder has exited with
 * status 0, and fails with DecoderError otherwise (a truncated gzip file, say). Destroying it
 * stops the decoder.
 */
export function checkedPayload(job: DecodedJob, decoder: string): Readable {
  async function* chunks() {
    try {
      for await (const chunk of job.payload) yield chunk as Buffer;
      const status = await job.exited;
      if (status.code !== 0) throw decoderFailure(decoder, status);
    } finally {
      job.abort(); // a consumer that stopped early: stop the decoder too
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}

/**
 * --verify-decoder: the decoder's whole output after the header copied to a nameless spool file
 * (sys/spool.ts: 0600 in $TMPDIR, no name to leave behind) and its exit awaited, before anything
 * is given a byte of it. Resolves to the spool's descriptor (the caller closes it), its offset
 * at 0, where the payload starts (the writes are positional and leave it there): a regular
 * file, as a plain job's file is. A decoder that does not exit with status 0 (killed by a signal
 * included, or still running 5 s after closing its output: killed then) rejects with
 * DecoderError, and nothing of its output is kept. `signal` stops the decoder (as abort() does)
 * and rejects with the signal's reason.
 */
export async function spoolDecoded(job: DecodedJob, decoder: string, signal?: AbortSignal): Promise<number> {
  signal?.throwIfAborted();
  const spool = openSpoolSync();
  const stop = () => job.abort();
  signal?.addEventListener('abort', stop, { once: true });
  try {
    let position = 0;
    for await (const chunk of job.payload) {
      const b = chunk as Buffer;
      for (let done = 0; done < b.length; ) {
        const { bytesWritten } = await write(spool, b, done, b.length - done, position);
        done += bytesWritten;
        position += bytesWritten;
      }
    }
    job.abort(); // its output ended: it gets a few seconds to exit (abort() says how long)
    const status = await job.exited;
    signal?.throwIfAborted();
    if (status.code !== 0) throw decoderFailure(decoder, status);
    return spool;
  } catch (err) {
    closeQuietly(spool);
    job.abort();
    signal?.throwIfAborted(); // stopped by the caller: its reason, not the broken stream's
    throw err;
  } finally {
    signal?.removeEventListener('abort', stop);
  }
}
