/**
 * Public keys: fingerprints as `ssh-keygen -lf` prints them, the types we refuse, and FIDO ("sk-")
 * signatures, which we make here with software keys in their layout and ssh-keygen verifies.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { SignatureError } from '../../src/base/errors.js';
import { p1363ToSsh } from '../../src/sign/ecdsa.js';
import {
  armor,
  encodeSshSig,
  fingerprintOf,
  parsePublicKeyBlob,
  parsePublicKeyLine,
  parseSshSig,
  toSign,
  verifySshSig,
} from '../../src/sign/index.js';
import { keyBlobOf } from '../../src/sign/private-key.js';
import { wireConcat, wireString, wireU32 } from '../../src/sign/wire.js';
import { describeIfPresent } from '../gate.js';
import { GATE, KEY_TYPES, keygen, keygenVerify, MISSING, makeKey, pubLine, suiteDir } from './keys.js';

const MESSAGE = Buffer.from('job 12\n');

describeIfPresent('public keys', MISSING, GATE, () => {
  let dir: string;
  beforeAll(() => {
    dir = suiteDir();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('fingerprints are those ssh-keygen -lf prints, for each key type', () => {
    for (const t of KEY_TYPES) {
      const key = makeKey(dir, `fp-${t.name}`, t.args);
      const printed = keygen(['-lf', `${key}.pub`])
        .toString()
        .split(' ')[1];
      const pk = parsePublicKeyLine(pubLine(key));
      expect(pk.fingerprint, t.name).toBe(printed);
      expect(fingerprintOf(pk.blob)).toBe(printed);
      expect(pk.comment).toBe(`fp-${t.name}@test`);
    }
  });

  test('certificates and DSA keys are refused by name; so is a line whose type is not its blob', () => {
    const ca = makeKey(dir, 'ca', ['-t', 'ed25519']);
    const user = makeKey(dir, 'user', ['-t', 'ed25519']);
    keygen(['-q', '-s', ca, '-I', 'id', '-n', 'alice', `${user}.pub`]);
    const cert = fs.readFileSync(`${user}-cert.pub`, 'utf8');
    expect(() => parsePublicKeyLine(cert)).toThrow(
      new SignatureError('unsupported key type ssh-ed25519-cert-v01@openssh.com'),
    );
    const dss = wireConcat(wireString('ssh-dss'), wireString(Buffer.alloc(3)));
    expect(() => parsePublicKeyBlob(dss)).toThrow('unsupported key type ssh-dss');
    const [, b64] = pubLine(user).split(' ');
    expect(() => parsePublicKeyLine(`ssh-rsa ${b64}`)).toThrow(
      'key type mismatch: the line says ssh-rsa, its blob says ssh-ed25519',
    );
    expect(() => parsePublicKeyLine('')).toThrow(SignatureError);
  });

  test('an RSA key below 1024 bits is refused, as OpenSSH refuses it', () => {
    const { publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 768 });
    expect(() => parsePublicKeyBlob(keyBlobOf(publicKey))).toThrow(/unsupported key type ssh-rsa of 768 bits/);
  });

  test('an RSA signature with SHA-1 ("ssh-rsa") is refused, as OpenSSH refuses it for SSHSIG', () => {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const blob = keyBlobOf(publicKey);
    const sha1 = crypto.sign('sha1', toSign('fspl', 'sha512', MESSAGE), privateKey);
    const sig = parseSshSig(encodeSshSig(blob, 'fspl', 'sha512', wireConcat(wireString('ssh-rsa'), wireString(sha1))));
    expect(() => verifySshSig(sig, MESSAGE)).toThrow(
      'malformed signature: signature of type ssh-rsa, not rsa-sha2-512 or rsa-sha2-256',
    );
    const sha256 = crypto.sign('sha256', toSign('fspl', 'sha512', MESSAGE), privateKey);
    verifySshSig(
      parseSshSig(encodeSshSig(blob, 'fspl', 'sha512', wireConcat(wireString('rsa-sha2-256'), wireString(sha256)))),
      MESSAGE,
    );
  });

  /** A FIDO signature as an authenticator makes it: over sha256(app) || flags || counter || sha256(data). */
  function skSigned(data: Buffer, flags: number, counter: number): Buffer {
    const tail = wireConcat(Buffer.of(flags), wireU32(counter));
    return wireConcat(
      crypto.createHash('sha256').update('ssh:').digest(),
      tail,
      crypto.createHash('sha256').update(data).digest(),
    );
  }

  const skKeys = {
    'sk-ssh-ed25519@openssh.com': () => {
      const { privateKey, publicKey } = crypto.generateKeyPairSync('ed25519');
      const x = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
      const blob = wireConcat(wireString('sk-ssh-ed25519@openssh.com'), wireString(x), wireString('ssh:'));
      return { blob, sign: (signed: Buffer) => crypto.sign(null, signed, privateKey) };
    },
    'sk-ecdsa-sha2-nistp256@openssh.com': () => {
      const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const q = keyBlobOf(publicKey).subarray(4 + 19 + 4 + 8 + 4);
      const blob = wireConcat(
        wireString('sk-ecdsa-sha2-nistp256@openssh.com'),
        wireString('nistp256'),
        wireString(q),
        wireString('ssh:'),
      );
      const curve = { name: 'nistp256', jwk: 'P-256', hash: 'sha256', size: 32 } as const;
      return {
        blob,
        sign: (signed: Buffer) =>
          p1363ToSsh(curve, crypto.sign('sha256', signed, { key: privateKey, dsaEncoding: 'ieee-p1363' })),
      };
    },
  };

  for (const [type, make] of Object.entries(skKeys)) {
    test(
      `${type}: a signature in its layout verifies with us and ` +
        `with ssh-keygen; one without user presence not with us`,
      () => {
        const { blob, sign } = make();
        const pk = parsePublicKeyBlob(blob);
        expect(pk.type).toBe(type);
        const allowed = path.join(dir, `allowed-${type}`);
        fs.writeFileSync(allowed, `sk ${type} ${blob.toString('base64')}\n`);
        for (const flags of [0x01, 0x05, 0x00]) {
          const data = toSign('fspl', 'sha512', MESSAGE);
          const inner = wireConcat(
            wireString(type),
            wireString(sign(skSigned(data, flags, 42))),
            Buffer.of(flags),
            wireU32(42),
          );
          const sshsig = encodeSshSig(blob, 'fspl', 'sha512', inner);
          const file = path.join(dir, `${type}-${flags}.sig`);
          fs.writeFileSync(file, armor(sshsig));
          const theirs = keygenVerify({ allowed, principal: 'sk', sig: file, message: MESSAGE });
          if (flags & 1) {
            verifySshSig(parseSshSig(sshsig), MESSAGE);
            expect(theirs.ok, theirs.said).toBe(true);
            expect(() => verifySshSig(parseSshSig(sshsig), Buffer.from('other'))).toThrow(
              'signature does not match what it signs',
            );
          } else {
            expect(() => verifySshSig(parseSshSig(sshsig), MESSAGE)).toThrow(/no user-presence flag/);
            // ssh-keygen -Y verify takes it (it requires no flag): we are stricter, as sshd is.
            expect(theirs.ok, theirs.said).toBe(true);
          }
        }
      },
    );
  }
});
