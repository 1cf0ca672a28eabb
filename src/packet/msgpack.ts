/**
 * The MessagePack writer for packet metadata.
 *
 * Written by hand rather than with @msgpack/msgpack because packets must be byte-identical to
 * the reference: byte strings are arrays of integers, every integer takes its smallest form
 * (bigints included, which the library always writes as 64-bit), and map keys keep their order.
 * It is also faster for these tiny documents. Reading uses @msgpack/msgpack (see codec.ts).
 */
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

  /** An unsigned integer in its smallest form. */
  uint(v: bigint | number): void {
    const n = BigInt(v);
    if (n < 0n) throw new RangeError('uint: negative value');
    if (n < 0x80n) {
      this.byte(Number(n));
    } else if (n <= 0xffn) {
      this.ensure(2);
      this.buf[this.pos++] = 0xcc;
      this.buf[this.pos++] = Number(n);
    } else if (n <= 0xffffn) {
      this.ensure(3);
      this.buf[this.pos++] = 0xcd;
      this.buf.writeUInt16BE(Number(n), this.pos);
      this.pos += 2;
    } else if (n <= 0xffff_ffffn) {
      this.ensure(5);
      this.buf[this.pos++] = 0xce;
      this.buf.writeUInt32BE(Number(n), this.pos);
      this.pos += 4;
    } else if (n <= 0xffff_ffff_ffff_ffffn) {
      this.ensure(9);
      this.buf[this.pos++] = 0xcf;
      this.buf.writeBigUInt64BE(n, this.pos);
      this.pos += 8;
    } else {
      throw new RangeError('uint: value exceeds 64 bits');
    }
  }

  /** A signed integer: non-negative values as uint, negative ones in their smallest signed form. */
  sint(v: bigint | number): void {
    const n = BigInt(v);
    if (n >= 0n) return this.uint(n);
    if (n >= -32n) {
      this.byte(Number(n) & 0xff);
    } else if (n >= -128n) {
      this.ensure(2);
      this.buf[this.pos++] = 0xd0;
      this.buf.writeInt8(Number(n), this.pos++);
    } else if (n >= -32768n) {
      this.ensure(3);
      this.buf[this.pos++] = 0xd1;
      this.buf.writeInt16BE(Number(n), this.pos);
      this.pos += 2;
    } else if (n >= -2147483648n) {
      this.ensure(5);
      this.buf[this.pos++] = 0xd2;
      this.buf.writeInt32BE(Number(n), this.pos);
      this.pos += 4;
    } else if (n >= -(1n << 63n)) {
      this.ensure(9);
      this.buf[this.pos++] = 0xd3;
      this.buf.writeBigInt64BE(n, this.pos);
      this.pos += 8;
    } else {
      throw new RangeError('sint: value exceeds 64 bits');
    }
  }

  arrayHeader(len: number): void {
    if (len < 16) {
      this.byte(0x90 | len);
    } else if (len <= 0xffff) {
      this.ensure(3);
      this.buf[this.pos++] = 0xdc;
      this.buf.writeUInt16BE(len, this.pos);
      this.pos += 2;
    } else {
      this.ensure(5);
      this.buf[this.pos++] = 0xdd;
      this.buf.writeUInt32BE(len, this.pos);
      this.pos += 4;
    }
  }

  mapHeader(len: number): void {
    if (len < 16) {
      this.byte(0x80 | len);
    } else if (len <= 0xffff) {
      this.ensure(3);
      this.buf[this.pos++] = 0xde;
      this.buf.writeUInt16BE(len, this.pos);
      this.pos += 2;
    } else {
      this.ensure(5);
      this.buf[this.pos++] = 0xdf;
      this.buf.writeUInt32BE(len, this.pos);
      this.pos += 4;
    }
  }

  /** A UTF-8 string (only used for the fixed key and variant names). */
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    const len = b.length;
    if (len < 32) {
      this.byte(0xa0 | len);
    } else if (len <= 0xff) {
      this.byte(0xd9);
      this.byte(len);
    } else if (len <= 0xffff) {
      this.ensure(3);
      this.buf[this.pos++] = 0xda;
      this.buf.writeUInt16BE(len, this.pos);
      this.pos += 2;
    } else {
      this.ensure(5);
      this.buf[this.pos++] = 0xdb;
      this.buf.writeUInt32BE(len, this.pos);
      this.pos += 4;
    }
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

  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}
