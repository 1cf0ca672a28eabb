/**
 * A cheap structural check of MessagePack bytes, run before they are decoded.
 *
 * @msgpack/msgpack allocates `new Array(n)` as soon as it reads an array header declaring n
 * elements, and nested declarations add up past any per-declaration cap (a 90 KB header could ask
 * for gigabytes). So the bytes are walked first, building nothing: the elements owed to open
 * containers may never outnumber the bytes left, which bounds what the decoder can allocate.
 */
import { BadPacketError } from '../base/errors.js';

/** Deeper nesting is refused; a real header nests 6 levels. */
export const MAX_METADATA_DEPTH = 1024;

function bad(what: string): never {
  throw new BadPacketError(`Invalid packet metadata: ${what}`);
}

/** Bytes a type byte is followed by, for the fixed-size types (-1: not one of them). */
const FIXED = new Int8Array(256).fill(-1);
for (let b = 0x00; b <= 0x7f; b++) FIXED[b] = 0; // positive fixint
for (let b = 0xe0; b <= 0xff; b++) FIXED[b] = 0; // negative fixint
for (const [b, n] of [
  [0xc0, 0],
  [0xc2, 0],
  [0xc3, 0], // nil, false, true
  [0xca, 4],
  [0xcb, 8], // float 32, 64
  [0xcc, 1],
  [0xcd, 2],
  [0xce, 4],
  [0xcf, 8], // uint 8..64
  [0xd0, 1],
  [0xd1, 2],
  [0xd2, 4],
  [0xd3, 8], // int 8..64
  [0xd4, 2],
  [0xd5, 3],
  [0xd6, 5],
  [0xd7, 9],
  [0xd8, 17], // fixext 1..16: a type byte, then the data
] as const)
  FIXED[b] = n;

/** Elements still owed by each open container; reused (the walk is synchronous). */
const remaining = new Float64Array(MAX_METADATA_DEPTH);

/**
 * Check that `buf` begins with one complete MessagePack value whose declared lengths fit in the
 * bytes present, nested at most MAX_METADATA_DEPTH deep. Throws BadPacketError otherwise. Bytes
 * after the value are left for the decoder to judge.
 */
export function checkMsgpackShape(buf: Uint8Array): void {
  const len = buf.length;
  // remaining[0..depth-1]: elements of each open container not yet complete, the one being read
  // included (map entries count twice); owed: their sum.
  let depth = 0;
  let owed = 0;
  let pos = 0;
  for (;;) {
    if (pos >= len) bad('the metadata ends in the middle of a value');
    const b = buf[pos++]!;
    const fixed = FIXED[b]!;
    let skip = 0; // bytes of data after the type byte and any length field
    let elements = -1; // for a container: how many elements it declares
    if (fixed >= 0) {
      skip = fixed;
    } else if (b <= 0x8f) {
      elements = 2 * (b & 0x0f); // fixmap
    } else if (b <= 0x9f) {
      elements = b & 0x0f; // fixarray
    } else if (b <= 0xbf) {
      skip = b & 0x1f; // fixstr
    } else {
      // The rest carry a length of 1, 2 or 4 bytes.
      const width =
        b === 0xc4 || b === 0xc7 || b === 0xd9
          ? 1
          : b === 0xc5 || b === 0xc8 || b === 0xda || b === 0xdc || b === 0xde
            ? 2
            : b === 0xc1
              ? 0
              : 4;
      if (width === 0) bad(`invalid MessagePack type byte 0x${b.toString(16)}`);
      if (width > len - pos) bad('a length runs past the end of the metadata');
      let n = buf[pos]!;
      for (let i = 1; i < width; i++) n = n * 256 + buf[pos + i]!;
      pos += width;
      if (b >= 0xdc)
        elements = b >= 0xde ? 2 * n : n; // array 16/32, map 16/32
      else skip = b >= 0xc7 && b <= 0xc9 ? n + 1 : n; // bin, str; ext has a type byte too
    }
    if (elements < 0) {
      if (skip > len - pos) bad('a length runs past the end of the metadata');
      pos += skip;
    } else {
      // Its elements, and those owed to the containers around it apart from the ones being read
      // (this container among them), each need a byte of their own.
      if (elements > len - pos - (owed - depth)) {
        const map = b >= 0xde || b <= 0x8f;
        bad(
          `${map ? 'a map' : 'an array'} declares ${map ? elements / 2 : elements} ` +
            `${map ? 'entries' : 'elements'}, more than the bytes left`,
        );
      }
      if (elements > 0) {
        if (depth >= MAX_METADATA_DEPTH) bad(`nested more than ${MAX_METADATA_DEPTH} levels deep`);
        remaining[depth++] = elements;
        owed += elements;
        continue;
      }
    }
    // A value is complete: count it against its container, closing the containers it completes.
    for (;;) {
      if (depth === 0) return; // the top-level value is complete
      owed--;
      if (--remaining[depth - 1]! > 0) break;
      depth--;
    }
  }
}
