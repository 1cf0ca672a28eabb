/**
 * The number a header's metadata claims, read from its first bytes without decoding the rest (nor
 * checking its CRC-32): what queue-status and queue-process say of a header too large to read.
 * The reference and fspl write `seq` first, as the map's first key (or a positional array's
 * first element).
 */

/** An unsigned integer in MessagePack at `at`, or undefined (not one, or cut). */
function uintAt(b: Uint8Array, at: number): bigint | undefined {
  const t = b[at];
  if (t === undefined) return undefined;
  if (t <= 0x7f) return BigInt(t);
  const width =
    t === 0xcc || t === 0xd0
      ? 1
      : t === 0xcd || t === 0xd1
        ? 2
        : t === 0xce || t === 0xd2
          ? 4
          : t === 0xcf || t === 0xd3
            ? 8
            : 0;
  if (width === 0 || at + 1 + width > b.length) return undefined;
  let v = 0n;
  for (let i = 1; i <= width; i++) v = (v << 8n) | BigInt(b[at + i]!);
  const signed = t >= 0xd0;
  if (signed && v >> BigInt(width * 8 - 1) !== 0n) return undefined; // negative: no sequence number
  return v;
}

/** Bytes to skip for a map's or an array's header at `at` (fixmap, map16, map32 and the same for arrays), or 0. */
function containerHeader(t: number, map: boolean): number {
  if (map) return t >= 0x80 && t <= 0x8f ? 1 : t === 0xde ? 3 : t === 0xdf ? 5 : 0;
  return t >= 0x90 && t <= 0x9f ? 1 : t === 0xdc ? 3 : t === 0xdd ? 5 : 0;
}

const SEQ_FIXSTR = [0xa3, 0x73, 0x65, 0x71]; // "seq"

/** The sequence number the metadata starting with these bytes claims, or undefined. */
export function claimedSeq(meta: Uint8Array): bigint | undefined {
  const t = meta[0];
  if (t === undefined) return undefined;
  const asArray = containerHeader(t, false);
  if (asArray) return uintAt(meta, asArray);
  const at = containerHeader(t, true);
  if (!at) return undefined;
  if (SEQ_FIXSTR.every((c, i) => meta[at + i] === c)) return uintAt(meta, at + 4);
  // str8 "seq", as some encoders write short strings
  if (
    meta[at] === 0xd9 &&
    meta[at + 1] === 3 &&
    meta[at + 2] === 0x73 &&
    meta[at + 3] === 0x65 &&
    meta[at + 4] === 0x71
  )
    return uintAt(meta, at + 5);
  return undefined;
}
