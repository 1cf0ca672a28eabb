/**
 * checkHeaderSignature's memo: a signature verified once is not verified again over the same signed
 * fields, and any field changed under the same signature is verified again, and refused.
 */
import fs from 'node:fs';
import { afterAll, expect, test } from 'vitest';
import { sameSignedContent, signedMessage } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import { sealOf } from '../../src/packet/seal/seal.js';
import type { PacketHeader } from '../../src/packet/types.js';
import { AllowedSigners } from '../../src/sign/allowed-signers.js';
import { HeaderSigner } from '../../src/sign/header-signer.js';
import { checkHeaderSignature } from '../../src/sign/packet-signature.js';
import { describeIfPresent } from '../gate.js';
import { GATE, MISSING, makeKey, pubLine, suiteDir } from './keys.js';

const b = (s: string) => Buffer.from(s);

/** Each way to change one signed field of a header, keeping its signature. */
const CHANGES: Record<string, (h: PacketHeader) => PacketHeader> = {
  seq: (h) => ({ ...h, seq: h.seq + 1n }),
  'ctime seconds': (h) => ({ ...h, ctime: { ...h.ctime, secs: h.ctime.secs - 1n } }),
  'ctime nanoseconds': (h) => ({ ...h, ctime: { ...h.ctime, nanos: h.ctime.nanos + 1 } }),
  'a parameter': (h) => ({ ...h, cmd: { kind: 'Command', params: [b('rm'), b('-rf')], env: [[b('A'), b('1')]] } }),
  'one parameter more': (h) => ({
    ...h,
    cmd: { kind: 'Command', params: [b('ls'), b('-l'), b('/')], env: [[b('A'), b('1')]] },
  }),
  'an environment value': (h) => ({
    ...h,
    cmd: { kind: 'Command', params: [b('ls'), b('-l')], env: [[b('A'), b('2')]] },
  }),
  'an environment name': (h) => ({
    ...h,
    cmd: { kind: 'Command', params: [b('ls'), b('-l')], env: [[b('B'), b('1')]] },
  }),
  'the command type': (h) => ({ ...h, cmd: { kind: 'NOP' } }),
  'the sealed length': (h) => ({ ...h, seal: { ...h.seal!, length: h.seal!.length + 1n } }),
  'the sealed CRC-32': (h) => ({ ...h, seal: { ...h.seal!, crc32: h.seal!.crc32 ^ 1 } }),
  'the payload digest': (h) => ({ ...h, signature: { ...h.signature!, sha512: Buffer.alloc(64, 9) } }),
  'the not-before time': (h) => ({ ...h, notBefore: (h.notBefore ?? 0) + 1000 }),
  'the retries': (h) => ({ ...h, retries: (h.retries ?? 0n) + 1n }),
};

describeIfPresent('checkHeaderSignature', MISSING, GATE, () => {
  const dir = suiteDir();
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const key = makeKey(dir, 'memo', ['-t', 'ed25519']);
  const signers = AllowedSigners.parse(`alice ${pubLine(key)}\n`, 'allowed_signers');
  const payload = b('payload\n');
  const unsigned = {
    ...makeHeader({ seq: 7n, cmd: { kind: 'Command', params: [b('ls'), b('-l')], env: [[b('A'), b('1')]] } }),
    seal: sealOf(payload),
  };
  const honest = HeaderSigner.load(key).sign(unsigned, Buffer.alloc(64, 1));

  test.each(Object.entries(CHANGES))('%s changed under a signature verified a moment ago: refused', (_what, change) => {
    expect(checkHeaderSignature(honest, signers).principal).toBe('alice');
    const forged = change(honest);
    expect(sameSignedContent(honest, forged)).toBe(false);
    expect(
      signedMessage(forged, forged.signature!.sha512).equals(signedMessage(honest, honest.signature!.sha512)),
    ).toBe(false);
    expect(() => checkHeaderSignature(forged, signers)).toThrow('signature does not match what it signs');
    // And the honest one still passes after the forgery was refused.
    expect(checkHeaderSignature(honest, signers).principal).toBe('alice');
  });

  test('a header with a not-before time is signed with it: it verifies, and it taken off is refused', () => {
    const later = HeaderSigner.load(key).sign({ ...unsigned, notBefore: Date.UTC(2030, 0, 1) }, Buffer.alloc(64, 1));
    expect(checkHeaderSignature(later, signers).principal).toBe('alice');
    const { notBefore: _, ...without } = later;
    expect(() => checkHeaderSignature(without, signers)).toThrow('signature does not match what it signs');
    for (const change of Object.values(CHANGES))
      expect(() => checkHeaderSignature(change(later), signers)).toThrow('signature does not match what it signs');
  });

  test(
    'the same signed fields in another object (a header ' + 'read again) pass, and the signers are asked each time',
    () => {
      const again = structuredClone(honest);
      expect(sameSignedContent(honest, again)).toBe(true);
      expect(checkHeaderSignature(again, signers).principal).toBe('alice');
      const expired = AllowedSigners.parse(`alice valid-before="20000101" ${pubLine(key)}\n`, 'allowed_signers');
      expect(() => checkHeaderSignature(again, expired)).toThrow('is valid only before');
    },
  );
});
