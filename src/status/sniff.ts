/**
 * Sniffing: what a file that does not decode as a packet probably is (a compressed or encrypted
 * file read without its decoder, an empty or truncated file...), from its first bytes. Used by
 * `fspl queue-status` (report.ts) to say why a job file can not be read.
 */
import fs from 'node:fs';
import {
  BadPacketError,
  DecoderError,
  describeSystemError,
  ShortReadError,
  UntrustedFileError,
} from '../base/errors.js';
import { PREFIX_LENGTH } from '../packet/codec.js';
import { closeQuietly, readSomeSync } from '../sys/io.js';
import { READ_JOB } from '../sys/untrusted.js';

/** What the first bytes of a file say it is. */
export type SniffKind =
  | 'empty'
  | 'filespooler'
  | 'gzip'
  | 'zstd'
  | 'xz'
  | 'bzip2'
  | 'lz4'
  | 'openpgp'
  | 'openpgp-armored'
  | 'age'
  | 'age-armored'
  | 'unknown';

/** How many leading bytes sniffBytes looks at (at most). */
export const SNIFF_LENGTH = 64;

const TAG = Buffer.from('*FILESPOOLER', 'latin1');

function startsWith(head: Uint8Array, magic: Uint8Array | readonly number[] | string): boolean {
  const m = typeof magic === 'string' ? Buffer.from(magic, 'latin1') : magic;
  if (head.length < m.length) return false;
  for (let i = 0; i < m.length; i++) if (head[i] !== m[i]) return false;
  return true;
}

/**
 * OpenPGP packet tags a binary OpenPGP message (encrypted, signed or compressed, as gpg writes
 * it) starts with: public-key or symmetric session keys, signatures, one-pass signatures,
 * compressed or literal data, encrypted data.
 */
const OPENPGP_FIRST_TAGS = new Set([1, 2, 3, 4, 8, 9, 11, 18, 20]);

function isOpenPgpBinary(head: Uint8Array): boolean {
  if (head.length < 2) return false;
  const b = head[0]!;
  if ((b & 0x80) === 0) return false;
  // New format: 11tttttt; old format: 10ttttll.
  const tag = b & 0x40 ? b & 0x3f : (b >> 2) & 0x0f;
  return OPENPGP_FIRST_TAGS.has(tag);
}

/** Guess a file's format from its first bytes (give at least SNIFF_LENGTH if the file has them). */
export function sniffBytes(head: Uint8Array): SniffKind {
  if (head.length === 0) return 'empty';
  // A prefix of the tag counts: a packet cut short within its first 12 bytes.
  if (startsWith(head, TAG) || (head.length < TAG.length && startsWith(TAG, Buffer.from(head).toString('latin1'))))
    return 'filespooler';
  if (startsWith(head, [0x1f, 0x8b])) return 'gzip';
  if (startsWith(head, [0x28, 0xb5, 0x2f, 0xfd])) return 'zstd';
  if (startsWith(head, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])) return 'xz';
  if (startsWith(head, 'BZh') && head.length >= 4 && head[3]! >= 0x31 && head[3]! <= 0x39) return 'bzip2';
  if (startsWith(head, [0x04, 0x22, 0x4d, 0x18])) return 'lz4';
  if (startsWith(head, 'age-encryption.org/')) return 'age';
  if (startsWith(head, '-----BEGIN AGE ENCRYPTED FILE-----')) return 'age-armored';
  if (startsWith(head, '-----BEGIN PGP ')) return 'openpgp-armored';
  if (isOpenPgpBinary(head)) return 'openpgp';
  return 'unknown';
}

/** A short description of a sniffed format, e.g. "gzip data". */
export function describeKind(kind: SniffKind): string {
  switch (kind) {
    case 'empty':
      return 'an empty file';
    case 'filespooler':
      return 'a filespooler packet';
    case 'gzip':
    case 'zstd':
    case 'xz':
    case 'bzip2':
    case 'lz4':
      return `${kind} data`;
    case 'openpgp':
      return 'OpenPGP data';
    case 'openpgp-armored':
      return 'ASCII-armored OpenPGP data';
    case 'age':
      return 'age-encrypted data';
    case 'age-armored':
      return 'ASCII-armored age-encrypted data';
    case 'unknown':
      return 'data of an unknown kind';
  }
}

/** The decoder usually used for a format (for the "did you forget -d ...?" hint). */
export function suggestedDecoder(kind: SniffKind): string | undefined {
  switch (kind) {
    case 'gzip':
      return 'zcat';
    case 'zstd':
      return 'zstdcat';
    case 'xz':
      return 'xzcat';
    case 'bzip2':
      return 'bzcat';
    case 'lz4':
      return 'lz4cat';
    case 'openpgp':
    case 'openpgp-armored':
      return "'gpg -q -d'";
    case 'age':
    case 'age-armored':
      return "'age -d -i KEYFILE'";
    default:
      return undefined;
  }
}

export type FileType = 'file' | 'directory' | 'symlink' | 'other';

export function fileType(st: fs.Stats | fs.Dirent): FileType {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSymbolicLink()) return 'symlink';
  return 'other';
}

/** The first bytes of a file (up to SNIFF_LENGTH) and its size. */
export function readFileHead(p: string): { head: Buffer; size: number; type: FileType } {
  // lstat first: opening a FIFO would wait for a writer, and a link is never followed (untrusted.ts).
  const st = fs.lstatSync(p);
  const type = fileType(st);
  if (type !== 'file') return { head: Buffer.alloc(0), size: st.size, type };
  const fd = fs.openSync(p, READ_JOB);
  try {
    const head = Buffer.alloc(SNIFF_LENGTH);
    const n = readSomeSync(fd, head, 0, SNIFF_LENGTH, 0);
    return { head: head.subarray(0, n), size: st.size, type };
  } finally {
    closeQuietly(fd);
  }
}

function hexBytes(b: Uint8Array, n = 8): string {
  return Array.from(b.subarray(0, n), (x) => x.toString(16).padStart(2, '0')).join(' ');
}

/**
 * Why a file does not read as a packet: the likely cause, in words, from its first bytes, its
 * size and the error the read gave (`error`, if any). With `decoder`, the header was read through
 * that decoder and it is the decoder (or its output) that failed.
 */
export function diagnoseUnreadable(
  info: { head: Uint8Array; size: number; type?: FileType },
  error?: unknown,
  decoder?: string,
): { kind: SniffKind; cause: string } {
  if (info.type === 'symlink') {
    return {
      kind: 'unknown',
      cause:
        'a symbolic link, which is not followed: whoever writes jobs/ could point it at any file (docs/security.md)',
    };
  }
  if (info.type !== undefined && info.type !== 'file') {
    return { kind: 'unknown', cause: `not a regular file (a ${info.type})` };
  }
  if (error instanceof UntrustedFileError) {
    return {
      kind: 'unknown',
      cause:
        `${error.why}, which is not read: whoever writes jobs/ could have ` +
        `linked any file there (docs/security.md)`,
    };
  }
  const kind = sniffBytes(info.head);
  const message = error === undefined ? undefined : describeSystemError(error);
  if (decoder !== undefined) {
    const what =
      error instanceof DecoderError || !(error instanceof BadPacketError)
        ? `decoder ${JSON.stringify(decoder)} failed${message ? `: ${message}` : ''}`
        : `decoder ${JSON.stringify(decoder)} did not produce a valid packet${message ? `: ${message}` : ''}`;
    let hint = '';
    if (kind === 'filespooler') hint = '; the file itself is a plain packet, not encoded';
    else if (kind === 'empty') hint = '; the file is empty';
    else if (kind !== 'unknown') hint = `; the file holds ${describeKind(kind)}`;
    return { kind, cause: what + hint };
  }
  switch (kind) {
    case 'empty':
      return { kind, cause: 'empty file' };
    case 'filespooler': {
      if (error instanceof ShortReadError || info.size < PREFIX_LENGTH) {
        let need = '';
        if (info.head.length >= 22) {
          const total = BigInt(PREFIX_LENGTH) + Buffer.from(info.head).readBigUInt64BE(14);
          need = `; its header needs ${total} bytes`;
        } else if (info.size < PREFIX_LENGTH) {
          need = `; a header needs at least ${PREFIX_LENGTH} bytes`;
        }
        return { kind, cause: `truncated header: the file has only ${info.size} bytes${need} (an incomplete copy?)` };
      }
      if (message?.startsWith('Input version')) return { kind, cause: `unsupported packet version: ${message}` };
      return { kind, cause: `damaged packet: ${message ?? 'bad header'}` };
    }
    case 'unknown':
      return { kind, cause: `not a filespooler packet (starts with ${hexBytes(info.head)})` };
    default: {
      const d = suggestedDecoder(kind);
      return { kind, cause: `${describeKind(kind)}: did you forget -d ${d}?` };
    }
  }
}
