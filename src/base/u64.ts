/** The bounds of the integers in packets and sequence files: sequence numbers are u64, bigint end to end. */
export const U64_MAX = 0xffff_ffff_ffff_ffffn;
export const I64_MIN = -(1n << 63n);
export const I64_MAX = (1n << 63n) - 1n;

/** The smaller of two bigints (Math.min takes numbers only). */
export function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** The larger of two bigints. */
export function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
