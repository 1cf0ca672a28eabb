/**
 * Key files: OpenSSH private keys of each type (plain and with a passphrase), PEM keys, public key
 * files, and the errors for what is none of these.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { SignatureError } from '../../src/base/errors.js';
import { loadPrivateKey, parsePublicKeyLine, signMessage, signMessageSync } from '../../src/sign/index.js';
import { WireReader } from '../../src/sign/wire.js';
import { describeIfPresent } from '../gate.js';
import { GATE, KEY_TYPES, keygen, MISSING, makeKey, pubLine, suiteDir } from './keys.js';

const MESSAGE = Buffer.from('job\n');

/** The base64 body of an OpenSSH private key file, decoded. */
function opensshBlob(file: string): Buffer {
  return Buffer.from(
    fs
      .readFileSync(file, 'utf8')
      .replace(/-----[A-Z ]+-----/g, '')
      .replace(/\s+/g, ''),
    'base64',
  );
}

/** The blob back into a key file, as ssh-keygen wraps it. */
function writeOpenssh(file: string, blob: Buffer): void {
  const b64 = blob.toString('base64').replace(/(.{70})/g, '$1\n');
  fs.writeFileSync(file, `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}\n-----END OPENSSH PRIVATE KEY-----\n`);
}

/**
 * Where the private section's body starts in an OpenSSH key blob (after magic, cipher, kdf, options, count, public key,
 * length).
 */
function privateOffset(blob: Buffer): number {
  const r = new WireReader(blob);
  r.bytes(15);
  r.string();
  r.string();
  r.string();
  r.u32();
  r.string();
  return blob.length - r.remaining + 4;
}

describeIfPresent('private keys', MISSING, GATE, () => {
  let dir: string;
  beforeAll(() => {
    dir = suiteDir();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('an OpenSSH key of each type loads plain, its public key the .pub file', () => {
    for (const t of KEY_TYPES) {
      const file = makeKey(dir, `plain-${t.name}`, t.args);
      const k = loadPrivateKey(file);
      expect(k.kind, t.name).toBe('plain');
      expect(k.publicKey.blob.equals(parsePublicKeyLine(pubLine(file)).blob)).toBe(true);
      expect(signMessageSync(MESSAGE, { key: file }).fingerprint).toBe(k.publicKey.fingerprint);
    }
  });

  test('a key with a passphrase gives its public key only; a .pub file gives the public key', () => {
    const file = makeKey(dir, 'secret', ['-t', 'ed25519'], 'secret');
    const k = loadPrivateKey(file);
    expect(k.kind).toBe('encrypted');
    expect(k.publicKey.fingerprint).toBe(parsePublicKeyLine(pubLine(file)).fingerprint);
    expect(loadPrivateKey(`${file}.pub`)).toMatchObject({
      kind: 'public',
      publicKey: { fingerprint: k.publicKey.fingerprint },
    });
    expect(() => signMessageSync(MESSAGE, { key: file })).toThrow(
      `${file} can not sign without ssh-agent (it has a passphrase)`,
    );
  });

  test('PEM keys (PKCS#1 RSA, SEC1 EC, PKCS#8 ed25519) load and sign', async () => {
    const rsa = makeKey(dir, 'pem-rsa', ['-t', 'rsa', '-b', '2048', '-m', 'PEM']);
    const ec = makeKey(dir, 'pem-ec', ['-t', 'ecdsa', '-b', '384', '-m', 'PEM']);
    expect(fs.readFileSync(rsa, 'utf8')).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect(fs.readFileSync(ec, 'utf8')).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    for (const file of [rsa, ec]) {
      const k = loadPrivateKey(file);
      expect(k.kind).toBe('plain');
      expect(k.publicKey.fingerprint).toBe(
        keygen(['-lf', `${file}.pub`])
          .toString()
          .split(' ')[1],
      );
    }
    const ed = path.join(dir, 'pkcs8-ed25519');
    fs.writeFileSync(ed, crypto.generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }));
    expect((await signMessage(MESSAGE, { key: ed })).fingerprint).toBe(loadPrivateKey(ed).publicKey.fingerprint);
  });

  test('an encrypted PEM key is found by its .pub, or named as needing one', () => {
    const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const file = path.join(dir, 'enc.pem');
    fs.writeFileSync(
      file,
      privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: 'pw' }),
    );
    expect(() => loadPrivateKey(file)).toThrow(
      `${file}: an encrypted PEM key, and no ${file}.pub beside it to find it in ssh-agent`,
    );
    const other = makeKey(dir, 'for-pub', ['-t', 'ed25519']);
    fs.copyFileSync(`${other}.pub`, `${file}.pub`);
    expect(loadPrivateKey(file).kind).toBe('encrypted');
  });

  test('no file, not a key, a corrupt key: one clear line naming the file', () => {
    expect(() => loadPrivateKey(path.join(dir, 'none'))).toThrow(
      new SignatureError(`${path.join(dir, 'none')}: No such file or directory`),
    );
    const junk = path.join(dir, 'junk');
    fs.writeFileSync(junk, 'hello\n');
    expect(() => loadPrivateKey(junk)).toThrow(`${junk}: not an OpenSSH private key`);

    const good = makeKey(dir, 'good', ['-t', 'ed25519']);
    const blob = opensshBlob(good);
    const bad = path.join(dir, 'bad');
    const checkint = Buffer.from(blob);
    checkint[privateOffset(blob)]! ^= 1;
    writeOpenssh(bad, checkint);
    expect(() => loadPrivateKey(bad)).toThrow(`${bad}: malformed OpenSSH private key: its check numbers differ`);
    writeOpenssh(bad, blob.subarray(0, blob.length - 40));
    expect(() => loadPrivateKey(bad)).toThrow(new RegExp(`^${bad}: malformed OpenSSH private key: truncated`));
    // Another key's public half in front of this private half.
    const other = opensshBlob(makeKey(dir, 'other', ['-t', 'ed25519']));
    const swapped = Buffer.concat([
      other.subarray(0, privateOffset(other) - 4),
      blob.subarray(privateOffset(blob) - 4),
    ]);
    writeOpenssh(bad, swapped);
    expect(() => loadPrivateKey(bad)).toThrow(
      `${bad}: malformed OpenSSH private key: its private key does not belong to its public key`,
    );
  });
});
