/**
 * SSHSIG against the real ssh-keygen, for each key type: our signatures verify with
 * `ssh-keygen -Y verify`, its signatures verify with us, the namespace and the message are held,
 * and our armor is its armor byte for byte.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SignatureError } from '../../src/base/errors.js';
import {
  armor,
  encodeSshSig,
  NAMESPACE,
  parseSshSig,
  signMessage,
  toSign,
  unarmor,
  verifySshSig,
} from '../../src/sign/index.js';
import { describeIfPresent } from '../gate.js';
import { GATE, KEY_TYPES, keygenSign, keygenVerify, MISSING, makeKey, pubLine, suiteDir } from './keys.js';

const MESSAGE = Buffer.from('a packet header, say\n\0\x01\x02 and then some');

describeIfPresent('SSHSIG with ssh-keygen', MISSING, GATE, () => {
  let dir: string;
  const keys = new Map<string, string>();
  beforeAll(() => {
    dir = suiteDir();
    for (const t of KEY_TYPES) keys.set(t.name, makeKey(dir, t.name, t.args));
    const allowed = KEY_TYPES.map((t) => `${t.name}@test ${pubLine(keys.get(t.name)!)}`).join('\n');
    fs.writeFileSync(path.join(dir, 'allowed_signers'), `${allowed}\n`);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const t of KEY_TYPES) {
    test(`${t.name}: our signature verifies with ssh-keygen -Y verify`, async () => {
      const { blob, fingerprint } = await signMessage(MESSAGE, { key: keys.get(t.name)! });
      expect(fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
      const sig = path.join(dir, `${t.name}.ours.sig`);
      fs.writeFileSync(sig, armor(blob));
      const v = keygenVerify({
        allowed: path.join(dir, 'allowed_signers'),
        principal: `${t.name}@test`,
        sig,
        message: MESSAGE,
      });
      expect(v.said).toContain('Good "fspl" signature');
      expect(v.ok).toBe(true);
      // And ssh-keygen does not take it for another message.
      expect(
        keygenVerify({
          allowed: path.join(dir, 'allowed_signers'),
          principal: `${t.name}@test`,
          sig,
          message: Buffer.from('other'),
        }).ok,
      ).toBe(false);
    });

    test(`${t.name}: ssh-keygen's signature verifies with us, and its armor is ours byte for byte`, () => {
      const text = keygenSign(keys.get(t.name)!, 'fspl', MESSAGE);
      const sig = parseSshSig(unarmor(text));
      expect(sig.namespace).toBe(NAMESPACE);
      expect(sig.hashAlgorithm).toBe('sha512');
      expect(sig.publicKey.blob.toString('base64')).toBe(pubLine(keys.get(t.name)!).split(' ')[1]);
      verifySshSig(sig, MESSAGE);
      expect(armor(sig.blob)).toBe(text.toString('latin1'));
      expect(encodeSshSig(sig.publicKey.blob, sig.namespace, sig.hashAlgorithm, sig.signature).equals(sig.blob)).toBe(
        true,
      );
    });

    test(`${t.name}: a signature for namespace git, or of another message, is refused with the key named`, () => {
      const git = parseSshSig(unarmor(keygenSign(keys.get(t.name)!, 'git', MESSAGE)));
      const refusal = (f: () => void) => {
        try {
          f();
        } catch (err) {
          expect(err).toBeInstanceOf(SignatureError);
          expect((err as SignatureError).fingerprint).toBe(git.publicKey.fingerprint);
          return (err as SignatureError).message;
        }
        throw new Error('not refused');
      };
      expect(refusal(() => verifySshSig(git, MESSAGE))).toBe('signed for namespace "git", not "fspl"');
      const ok = parseSshSig(unarmor(keygenSign(keys.get(t.name)!, 'fspl', MESSAGE)));
      const flipped = Buffer.from(MESSAGE);
      flipped[3]! ^= 0x01;
      expect(refusal(() => verifySshSig(ok, flipped))).toBe('signature does not match what it signs');
      // A signature over git's bytes does not become fspl's by editing its namespace field.
      const relabelled = parseSshSig(encodeSshSig(git.publicKey.blob, 'fspl', git.hashAlgorithm, git.signature));
      expect(refusal(() => verifySshSig(relabelled, MESSAGE))).toBe('signature does not match what it signs');
    });
  }

  test('a sha256 signature (ssh-keygen -O hashalg=sha256) verifies too', () => {
    const sig = parseSshSig(unarmor(keygenSign(keys.get('rsa')!, 'fspl', MESSAGE, ['-O', 'hashalg=sha256'])));
    expect(sig.hashAlgorithm).toBe('sha256');
    verifySshSig(sig, MESSAGE);
  });

  test('unarmor takes CRLF lines and whitespace around; no armor is a clear error', () => {
    const text = keygenSign(keys.get('ed25519')!, 'fspl', MESSAGE).toString('latin1');
    const blob = unarmor(text);
    expect(unarmor(`\n  ${text.replace(/\n/g, '\r\n')}  \n\n`).equals(blob)).toBe(true);
    expect(unarmor(Buffer.from(text)).equals(blob)).toBe(true);
    expect(() => unarmor('hello')).toThrow(/not an armored SSH signature/);
    expect(() => unarmor('-----BEGIN SSH SIGNATURE-----\nAAAA\n')).toThrow(/no "-----END SSH SIGNATURE-----" line/);
    expect(() => unarmor('-----BEGIN SSH SIGNATURE-----\nAA!A\n-----END SSH SIGNATURE-----\n')).toThrow(SignatureError);
  });

  test('toSign is the SSHSIG preamble, namespace, empty reserved, hash name and digest', () => {
    const t = toSign('fspl', 'sha512', MESSAGE);
    expect(t.subarray(0, 6).toString()).toBe('SSHSIG');
    expect(t.readUInt32BE(6)).toBe(4);
    expect(t.subarray(10, 14).toString()).toBe('fspl');
    expect(t.readUInt32BE(14)).toBe(0);
    expect(t.length).toBe(6 + 8 + 4 + 10 + 4 + 64);
  });
});

describe('armor', () => {
  test('wraps at 70 columns with no blank line when the base64 fills its last line, as sshbuf_dtob64 does', () => {
    const exact = armor(Buffer.alloc(105, 1)); // 140 base64 characters: two full lines
    expect(exact.split('\n').map((l) => l.length)).toEqual([29, 70, 70, 27, 0]);
    expect(
      armor(Buffer.alloc(106, 1))
        .split('\n')
        .map((l) => l.length),
    ).toEqual([29, 70, 70, 4, 27, 0]);
    expect(armor(Buffer.alloc(0))).toBe('-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n');
    expect(unarmor(exact).equals(Buffer.alloc(105, 1))).toBe(true);
  });
});
