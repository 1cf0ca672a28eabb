/**
 * The MessagePack writer for packet metadata.
 *
 * Written by hand rather than with @msgpack/msgpack because packets must be byte-identical to
 * the reference: byte strings are arrays of integers, every integer takes its smallest form
 * (bigints included, which the library always writes as 64-bit), and map keys keep their order.
 * It is also faster for these tiny documents. Reading uses @msgpack/msgpack (see codec.ts).
 */
/** The few key and variant names, encoded once: every header writes them again. */
const KEYS = new Map<string, Buffer>();

export class MsgpackWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initial = 128) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  private byte(b: number): void {
    this.ensure(1);
    this.buf[this.pos++] = b;
  }

  /** A marker byte, then the `size` bytes that `write` puts at the position it is given. */
  private marked(marker: number, size: number, write: (buf: Buffer, at: number) => unknown): void {
    this.ensure(1 + size);
    this.buf[this.pos++] = marker;
    write(this.buf, this.pos);
    this.pos += size;
  }

  /** An unsigned integer in its smallest form. */
  uint(v: bigint | number): void {
    const n = BigInt(v);
    if (n < 0n) throw new RangeError('uint: negative value');
    if (n < 0x80n) this.byte(Number(n));
    else if (n <= 0xffn) this.marked(0xcc, 1, (b, at) => b.writeUInt8(Number(n), at));
    else if (n <= 0xffffn) this.marked(0xcd, 2, (b, at) => b.writeUInt16BE(Number(n), at));
    else if (n <= 0xffff_ffffn) this.marked(0xce, 4, (b, at) => b.writeUInt32BE(Number(n), at));
    else if (n <= 0xffff_ffff_ffff_ffffn) this.marked(0xcf, 8, (b, at) => b.writeBigUInt64BE(n, at));
    else throw new RangeError('uint: value exceeds 64 bits');
  }

  /** A signed integer: non-negative values as uint, negative ones in their smallest signed form. */
  sint(v: bigint | number): void {
    const n = BigInt(v);
    if (n >= 0n) {
      this.uint(n);
      return;
    }
    if (n >= -32n) this.byte(Number(n) & 0xff);
    else if (n >= -128n) this.marked(0xd0, 1, (b, at) => b.writeInt8(Number(n), at));
    else if (n >= -32768n) this.marked(0xd1, 2, (b, at) => b.writeInt16BE(Number(n), at));
    else if (n >= -2147483648n) this.marked(0xd2, 4, (b, at) => b.writeInt32BE(Number(n), at));
    else if (n >= -(1n << 63n)) this.marked(0xd3, 8, (b, at) => b.writeBigInt64BE(n, at));
    else throw new RangeError('sint: value exceeds 64 bits');
  }

  arrayHeader(len: number): void {
    this.lengthHeader(len, 0x90, 0xdc, 0xdd);
  }

  mapHeader(len: number): void {
    this.lengthHeader(len, 0x80, 0xde, 0xdf);
  }

  /** An array's or a map's length: in its first byte (fix), or after a 16-bit or 32-bit marker. */
  private lengthHeader(len: number, fix: number, marker16: number, marker32: number): void {
    if (len < 16) this.byte(fix | len);
    else if (len <= 0xffff) this.marked(marker16, 2, (b, at) => b.writeUInt16BE(len, at));
    else this.marked(marker32, 4, (b, at) => b.writeUInt32BE(len, at));
  }

  /** A UTF-8 string (only used for the fixed key and variant names). */
  str(s: string): void {
    let b = KEYS.get(s);
    if (b === undefined) {
      b = Buffer.from(s, 'utf8');
      if (KEYS.size < 64) KEYS.set(s, b);
    }
    const len = b.length;
    if (len < 32) this.byte(0xa0 | len);
    else if (len <= 0xff) this.marked(0xd9, 1, (buf, at) => buf.writeUInt8(len, at));
    else if (len <= 0xffff) this.marked(0xda, 2, (buf, at) => buf.writeUInt16BE(len, at));
    else this.marked(0xdb, 4, (buf, at) => buf.writeUInt32BE(len, at));
    this.ensure(len);
    b.copy(this.buf, this.pos);
    this.pos += len;
  }

  /** A byte string, the way the reference stores one: an array of integers. */
  byteArray(bytes: Uint8Array): void {
    this.arrayHeader(bytes.length);
    this.ensure(bytes.length * 2);
    for (const b of bytes) {
      if (b < 0x80) {
        this.buf[this.pos++] = b;
      } else {
        this.buf[this.pos++] = 0xcc;
        this.buf[this.pos++] = b;
      }
    }
  }

  /** Bytes as MessagePack bin (the reference's own keys never use it; ours may: signature.ts). */
  bin(bytes: Uint8Array): void {
    const len = bytes.length;
    if (len <= 0xff) this.marked(0xc4, 1, (buf, at) => buf.writeUInt8(len, at));
    else if (len <= 0xffff) this.marked(0xc5, 2, (buf, at) => buf.writeUInt16BE(len, at));
    else this.marked(0xc6, 4, (buf, at) => buf.writeUInt32BE(len, at));
    this.ensure(len);
    this.buf.set(bytes, this.pos);
    this.pos += len;
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}
