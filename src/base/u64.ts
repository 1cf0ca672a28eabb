/** The bounds of the integers in packets and sequence files: sequence numbers are u64, bigint end to end. */
export const U64_MAX = 0xffff_ffff_ffff_ffffn;
export const I64_MIN = -(1n << 63n);
export const I64_MAX = (1n << 63n) - 1n;
