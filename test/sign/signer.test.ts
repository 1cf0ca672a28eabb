/**
 * signMessage end to end: a key with a passphrase through a real ssh-agent (started here, the key
 * added with ssh-add through SSH_ASKPASS), the clear errors without one, and --sign-command.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SignatureError } from '../../src/base/errors.js';
import {
  agentHasKey,
  agentSign,
  armor,
  parsePublicKeyLine,
  parseSshSig,
  signMessage,
  toSign,
  verifySshSig,
} from '../../src/sign/index.js';
import { describeIfPresent } from '../gate.js';
import { ADD, AGENT, GATE, KEYGEN, keygenVerify, MISSING, makeKey, pubLine, suiteDir } from './keys.js';

const MESSAGE = Buffer.from('the header of job 3\n');

/** The error a promise rejects with (it must reject). */
async function rejection(p: Promise<unknown>): Promise<SignatureError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SignatureError);
    return err as SignatureError;
  }
  throw new Error('it did not reject');
}

describeIfPresent('signMessage', MISSING, GATE, () => {
  let dir: string;
  let allowed: string;
  const verifies = (blob: Buffer, principal: string) => {
    const sig = path.join(dir, `${principal}.sig`);
    fs.writeFileSync(sig, armor(blob));
    return keygenVerify({ allowed, principal, sig, message: MESSAGE });
  };
  beforeAll(() => {
    dir = suiteDir();
    allowed = path.join(dir, 'allowed_signers');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  describe('through ssh-agent', () => {
    let agent: ChildProcess;
    let sock: string;
    let ed: string;
    let rsa: string;
    beforeAll(async () => {
      sock = path.join(dir, 'agent.sock');
      agent = spawn(AGENT, ['-D', '-a', sock], { stdio: 'ignore' });
      for (let i = 0; i < 100 && !fs.existsSync(sock); i++) await new Promise((r) => setTimeout(r, 50));
      ed = makeKey(dir, 'ed-secret', ['-t', 'ed25519'], 'secret');
      rsa = makeKey(dir, 'rsa-secret', ['-t', 'rsa', '-b', '2048'], 'secret');
      const askpass = path.join(dir, 'askpass');
      fs.writeFileSync(askpass, '#!/bin/sh\necho secret\n', { mode: 0o755 });
      for (const key of [ed, rsa]) {
        const env = {
          ...process.env,
          SSH_AUTH_SOCK: sock,
          SSH_ASKPASS: askpass,
          SSH_ASKPASS_REQUIRE: 'force',
          DISPLAY: 'x',
        };
        const r = spawnSync(ADD, [key], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        if (r.status !== 0) throw new Error(`ssh-add: ${r.stderr}`);
      }
      fs.writeFileSync(allowed, `ed ${pubLine(ed)}\nrsa ${pubLine(rsa)}\n`);
    });
    afterAll(() => {
      agent.kill('SIGTERM');
    });

    test('a key with a passphrase signs through the agent, and ssh-keygen takes the signature', async () => {
      const env = { SSH_AUTH_SOCK: sock };
      for (const [key, principal] of [
        [ed, 'ed'],
        [rsa, 'rsa'],
      ] as const) {
        const { blob, fingerprint } = await signMessage(MESSAGE, { key }, env);
        expect(fingerprint).toBe(parsePublicKeyLine(pubLine(key)).fingerprint);
        expect(verifies(blob, principal).ok).toBe(true);
        // Its .pub file names the same key in the agent.
        expect((await signMessage(MESSAGE, { key: `${key}.pub` }, env)).fingerprint).toBe(fingerprint);
      }
      // An RSA key is asked for rsa-sha2-512 (the agent's default would be SHA-1 ssh-rsa).
      const sig = parseSshSig((await signMessage(MESSAGE, { key: rsa }, env)).blob);
      expect(sig.signature.subarray(4, 4 + 12).toString()).toBe('rsa-sha2-512');
    });

    test('agentHasKey and agentSign speak the protocol', async () => {
      const pk = parsePublicKeyLine(pubLine(ed));
      expect(await agentHasKey(sock, pk)).toBe(true);
      const stranger = parsePublicKeyLine(pubLine(makeKey(dir, 'stranger', ['-t', 'ed25519'])));
      expect(await agentHasKey(sock, stranger)).toBe(false);
      const data = toSign('fspl', 'sha512', MESSAGE);
      expect(pk.verify(data, await agentSign(sock, pk, data))).toBe(true);
      const refused = await rejection(agentSign(sock, stranger, data));
      expect(refused.message).toBe(`ssh-agent would not sign with ${stranger.fingerprint} (is it added? ssh-add KEY)`);
      expect(refused.fingerprint).toBe(stranger.fingerprint);
    });

    test('a key the agent does not hold, or no agent at all: what to run, in one line', async () => {
      const other = makeKey(dir, 'not-added', ['-t', 'ed25519'], 'secret');
      const want = `${other} is protected by a passphrase and no ssh-agent holds it: ssh-add ${other}`;
      expect((await rejection(signMessage(MESSAGE, { key: other }, { SSH_AUTH_SOCK: sock }))).message).toBe(want);
      expect((await rejection(signMessage(MESSAGE, { key: other }, {}))).message).toBe(want);
      expect((await rejection(signMessage(MESSAGE, { key: `${other}.pub` }, {}))).message).toBe(
        `${other}.pub holds only a public key and no ssh-agent holds its private key: ssh-add ${other}`,
      );
      const gone = await rejection(
        signMessage(MESSAGE, { key: other }, { SSH_AUTH_SOCK: path.join(dir, 'no-such.sock') }),
      );
      expect(gone.message).toBe(
        `cannot reach ssh-agent at ${path.join(dir, 'no-such.sock')}: No such file or directory`,
      );
    });
  });

  describe('--sign-command', () => {
    let key: string;
    beforeAll(() => {
      key = makeKey(dir, 'cmd', ['-t', 'ed25519']);
      fs.writeFileSync(allowed, `cmd ${pubLine(key)}\n`);
    });

    test('ssh-keygen -Y sign as the command: its signature, checked', async () => {
      const { blob, fingerprint } = await signMessage(
        MESSAGE,
        { command: `${KEYGEN} -Y sign -f ${key} -n fspl` },
        { PATH: process.env.PATH },
      );
      expect(fingerprint).toBe(parsePublicKeyLine(pubLine(key)).fingerprint);
      verifySshSig(parseSshSig(blob), MESSAGE);
      expect(verifies(blob, 'cmd').ok).toBe(true);
    });

    test("the environment given is the command's, and the shell is the one asked for", async () => {
      const env = { PATH: process.env.PATH, FSPL_TEST_KEY: key };
      const { blob } = await signMessage(
        MESSAGE,
        { command: `${KEYGEN} -Y sign -f "$FSPL_TEST_KEY" -n fspl`, shell: '/bin/bash' },
        env,
      );
      verifySshSig(parseSshSig(blob), MESSAGE);
      const r = await rejection(signMessage(MESSAGE, { command: 'true', shell: path.join(dir, 'no-shell') }, env));
      expect(r.message).toBe(`--sign-command could not start ${path.join(dir, 'no-shell')}: No such file or directory`);
    });

    test('a command that signs for git, signs another message, fails, or writes junk: a clear error', async () => {
      const env = { PATH: process.env.PATH };
      const git = await rejection(signMessage(MESSAGE, { command: `${KEYGEN} -Y sign -f ${key} -n git` }, env));
      expect(git.message).toBe('--sign-command gave a bad signature: signed for namespace "git", not "fspl"');
      expect(git.fingerprint).toBe(parsePublicKeyLine(pubLine(key)).fingerprint);
      const other = await rejection(
        signMessage(MESSAGE, { command: `cat >/dev/null; printf other | ${KEYGEN} -Y sign -f ${key} -n fspl` }, env),
      );
      expect(other.message).toBe('--sign-command gave a bad signature: signature does not match what it signs');
      expect((await rejection(signMessage(MESSAGE, { command: 'exit 1' }, env))).message).toBe(
        '--sign-command failed (exit 1)',
      );
      expect((await rejection(signMessage(MESSAGE, { command: 'kill -9 $$' }, env))).message).toBe(
        '--sign-command was killed by signal SIGKILL',
      );
      const junk = await rejection(signMessage(MESSAGE, { command: 'echo hello' }, env));
      expect(junk.message).toMatch(/^--sign-command gave a bad signature: not an armored SSH signature/);
      const flood = await rejection(signMessage(MESSAGE, { command: 'head -c 3000000 /dev/zero' }, env));
      expect(flood.message).toBe('--sign-command wrote more than 1048576 bytes: not a signature');
    });
  });
});
