import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { encodeHeader, makeHeader } from '../../src/lowlevel.js';
import { diagnoseUnreadable, sniffBytes } from '../../src/status/sniff.js';

function packet(seq: bigint): Buffer {
  const h = makeHeader({ seq, ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } });
  return Buffer.concat([encodeHeader(h), Buffer.from('payload')]);
}

describe('sniffBytes', () => {
  it('recognises the usual encodings by their magic bytes', () => {
    const gz = execFileSync('gzip', ['-c'], { input: 'x' });
    expect(sniffBytes(gz)).toBe('gzip');
    expect(sniffBytes(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0]))).toBe('zstd');
    expect(sniffBytes(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0]))).toBe('xz');
    expect(sniffBytes(Buffer.from('BZh91AY&SY'))).toBe('bzip2');
    expect(sniffBytes(Buffer.from([0x04, 0x22, 0x4d, 0x18]))).toBe('lz4');
    expect(sniffBytes(Buffer.from([0x85, 0x01, 0x0c]))).toBe('openpgp'); // old-format PKESK
    expect(sniffBytes(Buffer.from([0xc1, 0x0c, 0x03]))).toBe('openpgp'); // new-format PKESK
    expect(sniffBytes(Buffer.from([0x8c, 0x0d, 0x04]))).toBe('openpgp'); // SKESK (gpg -c)
    expect(sniffBytes(Buffer.from('-----BEGIN PGP MESSAGE-----\n'))).toBe('openpgp-armored');
    expect(sniffBytes(Buffer.from('age-encryption.org/v1\n-> X25519 '))).toBe('age');
    expect(sniffBytes(Buffer.from('-----BEGIN AGE ENCRYPTED FILE-----\n'))).toBe('age-armored');
    expect(sniffBytes(Buffer.alloc(0))).toBe('empty');
    expect(sniffBytes(packet(1n))).toBe('filespooler');
    expect(sniffBytes(Buffer.from('*FILES'))).toBe('filespooler'); // cut inside the tag
    expect(sniffBytes(Buffer.from('hello'))).toBe('unknown');
  });

  it('diagnoses with a hint, or says the decoder failed', () => {
    const gz = execFileSync('gzip', ['-c'], { input: packet(1n) });
    expect(diagnoseUnreadable({ head: gz, size: gz.length }).cause).toBe('gzip data: did you forget -d zcat?');
    expect(diagnoseUnreadable({ head: Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), size: 9 }).cause).toMatch(
      /zstd data: did you forget -d zstdcat\?/,
    );
    expect(diagnoseUnreadable({ head: Buffer.from('-----BEGIN PGP MESSAGE-----'), size: 99 }).cause).toMatch(
      /OpenPGP.*gpg -q -d/,
    );
    expect(diagnoseUnreadable({ head: Buffer.from('age-encryption.org/v1'), size: 99 }).cause).toMatch(
      /age-encrypted.*age -d/,
    );
    const viaDecoder = diagnoseUnreadable({ head: packet(1n), size: 50 }, new Error('boom'), 'zcat');
    expect(viaDecoder.cause).toMatch(/^decoder "zcat" failed: boom; the file itself is a plain packet/);
  });
});
