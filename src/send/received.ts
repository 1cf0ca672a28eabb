/**
 * What a receiver has taken into a queue, by sequence number: DIR/received, one range a line,
 * `FIRST LAST` (inclusive), ascending, merged where they touch.
 *
 * Ranges, not a "next number" (the ssh receiver's recvseq): NNCP delivers out of order. Nor the
 * queue's nextseq and jobs/: a token consumed since would look new when a copy comes again. The
 * ranges stay few: packets arrive mostly in order.
 *
 * Durable once: `write` writes a temporary file, fsyncs it, renames it over DIR/received and
 * fsyncs DIR. After that fsync a power cut keeps the new ranges; before it, the old ones, whole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ReceiveError } from '../base/errors.js';
import { maxBig, minBig } from '../base/u64.js';
import { fsyncDir } from '../sys/durable.js';
import { writeFresh } from '../sys/untrusted.js';

type Range = [first: bigint, last: bigint];

export const RECEIVED_FILE = 'received';

export class ReceivedLedger {
  private constructor(
    private readonly file: string,
    private ranges: Range[],
  ) {}

  /** The ledger of the queue at `dir` (empty when it has none yet). */
  static read(dir: string): ReceivedLedger {
    const file = path.join(dir, RECEIVED_FILE);
    let text = '';
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const ranges: Range[] = [];
    for (const [i, line] of text.split('\n').entries()) {
      if (line.trim() === '') continue;
      const m = /^(\d{1,20}) (\d{1,20})$/.exec(line.trim());
      if (!m || BigInt(m[1]!) > BigInt(m[2]!))
        throw new ReceiveError(
          `${file}:${i + 1}: not a range of sequence numbers (FIRST LAST): ${JSON.stringify(line)}`,
        );
      ranges.push([BigInt(m[1]!), BigInt(m[2]!)]);
    }
    const ledger = new ReceivedLedger(file, []);
    for (const [a, b] of ranges) ledger.addRange(a, b);
    return ledger;
  }

  has(seq: bigint): boolean {
    // Few ranges (see above): a scan from the top, where new numbers land, is enough.
    for (let i = this.ranges.length - 1; i >= 0; i--) {
      const [a, b] = this.ranges[i]!;
      if (seq > b) return false;
      if (seq >= a) return true;
    }
    return false;
  }

  add(seq: bigint): void {
    this.addRange(seq, seq);
  }

  /** The ranges, as `FIRST-LAST` words (for messages and status). */
  describe(): string {
    return this.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ') || 'none';
  }

  get rangeList(): readonly (readonly [bigint, bigint])[] {
    return this.ranges;
  }

  /** Make the ranges durable (see the file's comment). */
  write(): void {
    const tmp = `${this.file}.tmp`;
    // Its bytes durable before its name (the rename, then the directory's fsync); made new, as the
    // queue's directory may be writable by others (untrusted.ts).
    writeFresh(tmp, this.ranges.map(([a, b]) => `${a} ${b}\n`).join(''), 0o644, { fsync: true });
    fs.renameSync(tmp, this.file);
    fsyncDir(path.dirname(this.file));
  }

  private addRange(first: bigint, last: bigint): void {
    const out: Range[] = [];
    let a = first;
    let b = last;
    let placed = false;
    for (const [x, y] of this.ranges) {
      if (y + 1n < a) out.push([x, y]);
      else if (b + 1n < x) {
        if (!placed) out.push([a, b]);
        placed = true;
        out.push([x, y]);
      } else {
        a = minBig(x, a);
        b = maxBig(y, b);
      }
    }
    if (!placed) out.push([a, b]);
    this.ranges = out;
  }
}
