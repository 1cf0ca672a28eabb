/** Shared helpers for the tests of src/sign: keys made by the real ssh-keygen, and its verdicts. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const KEYGEN = '/usr/bin/ssh-keygen';
export const AGENT = '/usr/bin/ssh-agent';
export const ADD = '/usr/bin/ssh-add';
/** What these tests need and is not installed. */
export const MISSING = [KEYGEN, AGENT, ADD].filter((p) => !fs.existsSync(p));
export const GATE = {
  what: 'ssh signature tests',
  note: 'they need OpenSSH (ssh-keygen, ssh-agent, ssh-add): apt-get install openssh-client',
};

/** The key types we make, as ssh-keygen's -t and -b. */
export const KEY_TYPES = [
  { name: 'ed25519', args: ['-t', 'ed25519'] },
  { name: 'rsa', args: ['-t', 'rsa', '-b', '2048'] },
  { name: 'ecdsa-256', args: ['-t', 'ecdsa', '-b', '256'] },
  { name: 'ecdsa-384', args: ['-t', 'ecdsa', '-b', '384'] },
  { name: 'ecdsa-521', args: ['-t', 'ecdsa', '-b', '521'] },
] as const;

/** A directory for a whole file of tests (tempDir's are removed after each test): remove it in afterAll. */
export function suiteDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-sign-'));
}

/** Run ssh-keygen; throws with its stderr when it fails. */
export function keygen(args: string[], input?: Buffer | string): Buffer {
  const r = spawnSync(KEYGEN, args, { input: input ?? '', env: { ...process.env, SSH_AUTH_SOCK: '' } });
  if (r.status !== 0) throw new Error(`ssh-keygen ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** A new key at dir/name (and dir/name.pub), with a passphrase when given. */
export function makeKey(dir: string, name: string, args: readonly string[], passphrase = ''): string {
  const file = path.join(dir, name);
  keygen(['-q', ...args, '-N', passphrase, '-C', `${name}@test`, '-f', file]);
  return file;
}

/** The armored signature `ssh-keygen -Y sign` makes of `message`. */
export function keygenSign(key: string, namespace: string, message: Buffer, extra: string[] = []): Buffer {
  return keygen(['-Y', 'sign', '-f', key, '-n', namespace, ...extra], message);
}

/** `ssh-keygen -Y verify`'s verdict on a signature file: whether it let it in, and what it said. */
export function keygenVerify(o: {
  allowed: string;
  principal: string;
  namespace?: string;
  sig: string;
  message: Buffer;
  at?: string;
}): {
  ok: boolean;
  said: string;
} {
  const args = ['-Y', 'verify', '-f', o.allowed, '-I', o.principal, '-n', o.namespace ?? 'fspl', '-s', o.sig];
  if (o.at) args.push('-O', `verify-time=${o.at}`);
  const r = spawnSync(KEYGEN, args, { input: o.message });
  return { ok: r.status === 0, said: `${r.stdout}${r.stderr}` };
}

/** The public key line of a key (its .pub file). */
export function pubLine(key: string): string {
  return fs.readFileSync(`${key}.pub`, 'utf8').trim();
}
