/**
 * The SSH wire encoding (RFC 4251 section 5): uint32, string, mpint. Every length read is checked
 * against what remains, so a hostile length field can neither allocate nor read past the input:
 * a short input is a SignatureError ("malformed …"), never a RangeError.
 */
import { SignatureError } from '../base/errors.js';

/** A cursor over one buffer of wire data; `what` names it in errors ("malformed signature: …"). */
export class WireReader {
  private readonly buf: Buffer;
  private pos = 0;
  constructor(
    data: Uint8Array,
    private readonly what = 'data',
  ) {
    this.buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  u8(): number {
    this.need(1, 'byte');
    return this.buf[this.pos++]!;
  }

  u32(): number {
    this.need(4, 'uint32');
    const n = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return n;
  }

  /** `n` raw bytes (a fixed-size field, such as a preamble). */
  bytes(n: number): Buffer {
    this.need(n, `${n}-byte field`);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** A string's bytes (a view into the input: copy it to keep it past the input's life). */
  string(): Buffer {
    const n = this.u32();
    this.need(n, 'string body');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** A string read as UTF-8 text (names, namespaces: ASCII in practice). */
  text(): string {
    return this.string().toString('utf8');
  }

  /** A non-negative mpint's magnitude, big-endian, without leading zero bytes (empty for 0). */
  mpint(): Buffer {
    const b = this.string();
    if (b.length > 0 && b[0]! & 0x80) this.fail('negative mpint');
    let i = 0;
    while (i < b.length && b[i] === 0) i++;
    return b.subarray(i);
  }

  /** The bytes not read yet, consumed. */
  rest(): Buffer {
    const out = this.buf.subarray(this.pos);
    this.pos = this.buf.length;
    return out;
  }

  /** Insist that all was read: trailing bytes mean the input is not what we think it is. */
  done(): void {
    if (this.pos !== this.buf.length) this.fail(`${this.remaining} unexpected trailing bytes`);
  }

  /** Throw the reader's malformed error with a detail. */
  fail(detail: string): never {
    throw new SignatureError(`malformed ${this.what}: ${detail}`);
  }

  private need(n: number, field: string): void {
    if (n > this.remaining) this.fail(`truncated ${field} (${n} bytes wanted, ${this.remaining} left)`);
  }
}

/** uint32, big-endian. */
export function wireU32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/** string: uint32 length, then the bytes (text as UTF-8). */
export function wireString(b: Uint8Array | string): Buffer {
  const body = typeof b === 'string' ? Buffer.from(b, 'utf8') : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return Buffer.concat([wireU32(body.length), body]);
}

/** mpint of a non-negative magnitude: leading zeros dropped, one zero added when the top bit is set. */
export function wireMpint(magnitude: Uint8Array): Buffer {
  let i = 0;
  while (i < magnitude.length && magnitude[i] === 0) i++;
  const m = Buffer.from(magnitude.subarray(i));
  return wireString(m.length > 0 && m[0]! & 0x80 ? Buffer.concat([Buffer.of(0), m]) : m);
}

/** Pieces joined into one buffer. */
export function wireConcat(...parts: Uint8Array[]): Buffer {
  return Buffer.concat(parts);
}
