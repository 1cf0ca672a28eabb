/** HeaderSigner: one plain key loaded once signs many headers, each as `ssh-keygen -Y verify` accepts it. */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { makeHeader } from '../../src/packet/prepare.js';
import { sealOf } from '../../src/packet/seal/seal.js';
import { HeaderSigner } from '../../src/sign/header-signer.js';
import { armoredSignature, signedData } from '../../src/sign/packet-signature.js';
import { describeIfPresent } from '../gate.js';
import { GATE, KEY_TYPES, keygenVerify, MISSING, makeKey, pubLine, suiteDir } from './keys.js';

describeIfPresent('HeaderSigner', MISSING, GATE, () => {
  const dir = suiteDir();
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test.each(KEY_TYPES)('a $name key signs sealed headers that ssh-keygen verifies', ({ name, args }) => {
    const key = makeKey(dir, name, args);
    const signer = HeaderSigner.load(key);
    const allowed = path.join(dir, `${name}.allowed`);
    fs.writeFileSync(allowed, `host-a ${pubLine(key)}\n`);
    for (const seq of [1n, 2n]) {
      const payload = Buffer.from(`payload ${seq}\n`);
      const header = { ...makeHeader({ seq, cmd: { kind: 'Command', params: [], env: [] } }), seal: sealOf(payload) };
      const signed = signer.sign(header, Buffer.alloc(64, Number(seq)));
      const sig = path.join(dir, `${name}-${seq}.sig`);
      fs.writeFileSync(sig, armoredSignature(signed));
      expect(keygenVerify({ allowed, principal: 'host-a', sig, message: signedData(signed) })).toMatchObject({
        ok: true,
      });
    }
  });

  test('a key with a passphrase, or a public key alone, can not sign unattended; an unsealed header is refused', () => {
    const locked = makeKey(dir, 'locked', ['-t', 'ed25519'], 'secret');
    expect(() => HeaderSigner.load(locked)).toThrow(`${locked} can not sign unattended (it has a passphrase)`);
    expect(() => HeaderSigner.load(`${locked}.pub`)).toThrow('it holds no private key');
    const plain = HeaderSigner.load(makeKey(dir, 'plain', ['-t', 'ed25519']));
    expect(() => plain.sign(makeHeader({ seq: 1n, cmd: { kind: 'NOP' } }), Buffer.alloc(64))).toThrow(
      'a signed packet must be sealed',
    );
  });
});
