/**
 * The frames that carry an outbox's packets: for each packet a line `ID SEQ LENGTH`, then exactly
 * LENGTH bytes (the packet file). ID is the UUID of its fspl-ID.fspl name, kept on the far side;
 * SEQ its sequence number. The ssh receiver (receive-script.ts) reads them from its stdin; so do
 * `fspl queue-receive` and `fspl net receive` (receive.ts), fed by NNCP.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { ReceiveCutError, ReceiveError, SendError } from '../base/errors.js';
import { U64_MAX } from '../base/u64.js';
import { openJobFile } from '../sys/untrusted.js';
import type { OutgoingPacket } from './delivery.js';

export const ID_RE = /^[A-Za-z0-9-]+$/;

/** The identity of an outbox file: fspl-ID.fspl. */
export function packetId(filename: string): string {
  const id = filename.replace(/^fspl-/, '').replace(/\.fspl$/, '');
  if (!ID_RE.test(id)) throw new SendError(`Outbox file ${filename} has no usable name`);
  return id;
}

/** Until the stream takes more, or is gone (its listeners removed either way). */
function drained(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      stream.off('error', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}

/**
 * Write the packets' frames, in order, with back-pressure, until done or `stop()` says so. A file
 * or the stream failing ends it quietly: the reader of the far side's answers, or its exit status,
 * has the story. The stream is not ended here. Resolves with the number of frames written whole:
 * a delivery that takes its tool's exit status as the acknowledgement (NNCP) acknowledges no more.
 */
export async function writeFrames(
  out: NodeJS.WritableStream & { destroyed: boolean },
  packets: readonly OutgoingPacket[],
  stop: () => boolean,
): Promise<number> {
  let whole = 0;
  for (const p of packets) {
    if (stop() || out.destroyed) return whole;
    try {
      // Not through a link planted in the outbox (untrusted.ts): what is sent is a file of its own.
      const fd = openJobFile(p.path);
      let size: number;
      try {
        size = fs.fstatSync(fd).size; // outbox files never change once written
      } catch (err) {
        fs.closeSync(fd);
        throw err;
      }
      if (size === 0) fs.closeSync(fd);
      if (!out.write(`${p.id} ${p.seq} ${size}\n`)) await drained(out);
      // Exactly `size` bytes: the length was promised in the frame line. The stream owns its
      // descriptor: breaking out destroys it, and it closes the descriptor only once no read is
      // in flight (closing it ourselves could let a pending read land on a reused number).
      if (size > 0) {
        let sent = 0;
        for await (const chunk of fs.createReadStream('', { fd, start: 0, end: size - 1, highWaterMark: 256 * 1024 })) {
          if (stop() || out.destroyed) return whole;
          sent += (chunk as Buffer).length;
          if (!out.write(chunk)) await drained(out);
        }
        if (sent !== size) return whole; // the file shrank: not an outbox file any more
      }
      whole++;
    } catch {
      return whole;
    }
  }
  return whole;
}

/** A frame's line. */
export interface FrameHead {
  id: string;
  seq: bigint;
  length: number;
}

const MAX_LINE = 200;

/** Reads frames from a stream: `head()`, then the body with `body()`, and so on. */
export class FrameReader {
  private readonly chunks: AsyncIterator<Buffer>;
  private rest: Buffer = Buffer.alloc(0);
  private ended = false;

  constructor(input: Readable) {
    this.chunks = input[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  private async more(): Promise<boolean> {
    if (this.ended) return false;
    const r = await this.chunks.next();
    if (r.done) {
      this.ended = true;
      return false;
    }
    this.rest = this.rest.length === 0 ? r.value : Buffer.concat([this.rest, r.value]);
    return true;
  }

  /** The next frame's line, or undefined at the end of the input (between frames). */
  async head(): Promise<FrameHead | undefined> {
    for (;;) {
      const nl = this.rest.indexOf(10);
      if (nl >= 0) {
        const line = this.rest.subarray(0, nl).toString('latin1');
        this.rest = this.rest.subarray(nl + 1);
        return parseHead(line);
      }
      if (this.rest.length > MAX_LINE) throw new ReceiveError('bad frame: a line longer than a frame line');
      if (!(await this.more())) {
        if (this.rest.length > 0) throw new ReceiveCutError('the input ends inside a frame line');
        return undefined;
      }
    }
  }

  /** The current frame's `length` bytes, handed to `sink` as they come. */
  async body(length: number, sink: (chunk: Buffer) => void): Promise<void> {
    let left = length;
    while (left > 0) {
      if (this.rest.length === 0 && !(await this.more()))
        throw new ReceiveCutError(`the input ends inside a packet (${left} of ${length} bytes missing)`);
      const take = Math.min(left, this.rest.length);
      sink(this.rest.subarray(0, take));
      this.rest = this.rest.subarray(take);
      left -= take;
    }
  }
}

function parseHead(line: string): FrameHead {
  const m = /^(\S+) (\d{1,20}) (\d{1,15})$/.exec(line);
  if (!m || !ID_RE.test(m[1]!) || BigInt(m[2]!) > U64_MAX)
    throw new ReceiveError(`bad frame: ${JSON.stringify(line.slice(0, 80))}`);
  return { id: m[1]!, seq: BigInt(m[2]!), length: Number(m[3]!) };
}
