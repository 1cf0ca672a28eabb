/**
 * Reading job headers through the native addon (src/sys/native.ts says why): the first bytes of
 * many files for a queue's scans (nativeReadHeads), one job file opened at its payload
 * (nativeOpenHead), and the headers the addon decoded, as the JS decoder gives them.
 */
import { loadNative, type ParsedArrays } from '../sys/native.js';
import type { Bytes, PacketHeader } from './types.js';

const hasNul = (s: string) => s.includes('\0');

export interface HeadReads {
  /** The bytes read, file after file. */
  bytes: Buffer;
  /** Per file: the number of bytes read (they start where the previous file's end), or -errno. */
  lengths: Int32Array;
  /**
   * Per file: the header, when the bytes hold a complete header in the encoding fspl and the
   * reference write (decoded in C); undefined otherwise: decode the bytes, or read the file.
   */
  header(i: number): PacketHeader | undefined;
}

/**
 * Read up to `max` bytes from the start of each file `dir/name` (open, one pread, close), in C,
 * and decode the headers found there. Undefined when the addon is not available or `dir` cannot
 * be opened: read them one by one.
 */
export function nativeReadHeads(dir: string, names: readonly string[], max: number): HeadReads | undefined {
  const b = loadNative();
  if (!b || names.length === 0 || hasNul(dir) || names.some(hasNul)) return undefined;
  const joined = `${names.join('\0')}\0`;
  const r = b.readHeads(dir, joined, names.length, max, true);
  if (typeof r === 'number') return undefined;
  const [bytes, lengths, parsed] = r;
  const none = () => undefined;
  return { bytes, lengths, header: parsed ? headerReader(parsed) : none };
}

/** Build PacketHeader objects as decodeMetadata does (same shapes, fresh objects, copied bytes). */
function headerReader([kinds, seqs, secs, nanos, layouts, layout, data]: ParsedArrays): (
  i: number,
) => PacketHeader | undefined {
  const bytes = (at: number): Bytes => {
    const off = layout[at]!;
    const len = layout[at + 1]!;
    const out = Buffer.allocUnsafe(len);
    out.set(data.subarray(off, off + len));
    return out;
  };
  return (i) => {
    const kind = kinds[i];
    if (kind === undefined || kind < 0) return undefined;
    const ctime = { secs: secs[i]!, nanos: nanos[i]! };
    if (kind === 0) return { seq: seqs[i]!, ctime, cmd: { kind: 'NOP' } };
    if (kind === 1) return { seq: seqs[i]!, ctime, cmd: { kind: 'Fail' } };
    let at = layouts[i]!;
    const params: Bytes[] = [];
    for (let k = layout[at++]!; k > 0; k--, at += 2) params.push(bytes(at));
    const env: Array<[Bytes, Bytes]> = [];
    for (let k = layout[at++]!; k > 0; k--, at += 4) env.push([bytes(at), bytes(at + 2)]);
    return { seq: seqs[i]!, ctime, cmd: { kind: 'Command', params, env } };
  };
}

/**
 * Open a job file for its payload, its header read and decoded in C when it is in the usual
 * encoding (as nativeReadHeads): the descriptor is then at the payload, `payloadOffset` bytes in.
 * Without `header`, the descriptor is at 0: decode the header in JS from there. Undefined when the
 * addon is not available or the open fails (open it the usual way, which gives the usual error).
 */
export function nativeOpenHead(
  path: string,
  max: number,
): { fd: number; header?: PacketHeader; payloadOffset: number } | undefined {
  const b = loadNative();
  if (!b?.openHead || hasNul(path)) return undefined;
  const r = b.openHead(path, max);
  if (typeof r === 'number') return undefined;
  const [fd, payloadOffset, parsed] = r;
  return { fd, payloadOffset, header: parsed ? headerReader(parsed)(0) : undefined };
}
