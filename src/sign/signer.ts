/**
 * Signing a message as fspl does: an SSHSIG in namespace `fspl` over SHA-512, made in-process
 * with a plain key, by ssh-agent for a key with a passphrase, or by a command of the user's (a
 * hardware token's tool, `ssh-keygen -Y sign`). Every signature is verified before it is returned,
 * so that a broken signer is caught here and never reaches a packet.
 */
import { SignatureError, systemErrorWords } from '../base/errors.js';
import { spawnTalking } from '../sys/exec.js';
import { type LoadedKey, loadPrivateKey, signRaw, whyNoKey } from './private-key.js';
import { encodeSshSig, NAMESPACE, parseSshSig, toSign, unarmor, verifySshSig } from './sshsig.js';

/** A key file, or a command that reads the message on stdin and writes an armored signature. */
export type SignWith = { key: string } | { command: string; shell?: string };

export interface Signed {
  /** The binary SSHSIG. */
  blob: Buffer;
  /** The signing key's `SHA256:` fingerprint. */
  fingerprint: string;
}

const HASH = 'sha512';
/** An armored signature is a few KiB; a command that writes more is not writing one. */
const MAX_COMMAND_OUTPUT = 1024 * 1024;

/** An SSHSIG of `message` made as `how` says, verified. */
export async function signMessage(
  message: Buffer,
  how: SignWith,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Signed> {
  if ('command' in how) return signByCommand(message, how.command, how.shell ?? env.SHELL ?? '/bin/sh', env);
  const loaded = loadPrivateKey(how.key);
  if (loaded.kind === 'plain')
    return finish(loaded, signRaw(loaded.key, loaded.publicKey, toSign(NAMESPACE, HASH, message)), message);
  const socket = env.SSH_AUTH_SOCK;
  // The agent's client (node:net) is loaded only for a key that needs it: every start that can sign
  // (prepare, net put) would pay for it.
  const { agentHasKey, agentSign } = await import('./agent.js');
  if (!socket || !(await agentHasKey(socket, loaded.publicKey)))
    throw new SignatureError(noAgentReason(how.key, loaded), { fingerprint: loaded.publicKey.fingerprint });
  return finish(loaded, await agentSign(socket, loaded.publicKey, toSign(NAMESPACE, HASH, message)), message);
}

/** The same as signMessage with a plain (unencrypted) key, without waiting on anything. */
export function signMessageSync(message: Buffer, how: { key: string }): Signed {
  const loaded = loadPrivateKey(how.key);
  if (loaded.kind !== 'plain')
    throw new SignatureError(`${how.key} can not sign without ssh-agent (${whyNoKey(loaded.kind)})`, {
      fingerprint: loaded.publicKey.fingerprint,
    });
  return finish(loaded, signRaw(loaded.key, loaded.publicKey, toSign(NAMESPACE, HASH, message)), message);
}

/** Why a key that needs the agent can't be used: what the user should run. */
function noAgentReason(path: string, loaded: LoadedKey): string {
  if (loaded.publicKey.type.startsWith('sk-'))
    return `${path} is a security key's key and no ssh-agent holds it: ssh-add ${path}`;
  if (loaded.kind === 'public')
    return (
      `${path} holds only a public key and no ssh-agent holds ` +
      `its private key: ssh-add ${path.replace(/\.pub$/, '')}`
    );
  return `${path} is protected by a passphrase and no ssh-agent holds it: ssh-add ${path}`;
}

/** The SSHSIG around a signature blob, checked as a verifier will check it. */
function finish(loaded: LoadedKey, signature: Buffer, message: Buffer): Signed {
  const blob = encodeSshSig(loaded.publicKey.blob, NAMESPACE, HASH, signature);
  verifySshSig(parseSshSig(blob), message);
  return { blob, fingerprint: loaded.publicKey.fingerprint };
}

/** Run `shell -c command` with the message on stdin; its stdout must be an armored SSHSIG of it for `fspl`. */
async function signByCommand(message: Buffer, command: string, shell: string, env: NodeJS.ProcessEnv): Promise<Signed> {
  const out = await runSigner(message, command, shell, env);
  try {
    const sig = parseSshSig(unarmor(out));
    verifySshSig(sig, message);
    return { blob: sig.blob, fingerprint: sig.publicKey.fingerprint };
  } catch (err) {
    if (err instanceof SignatureError)
      throw new SignatureError(`--sign-command gave a bad signature: ${err.reason}`, {
        fingerprint: err.fingerprint,
        cause: err,
      });
    throw err;
  }
}

/** The command's stdout, at most MAX_COMMAND_OUTPUT bytes; its stderr goes to ours. */
function runSigner(message: Buffer, command: string, shell: string, env: NodeJS.ProcessEnv): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawnTalking(shell, ['-c', command], ['pipe', 'pipe', 'inherit'], undefined, false, env);
    const chunks: Buffer[] = [];
    let size = 0;
    let failure: SignatureError | undefined;
    child.stdout!.on('data', (d: Buffer) => {
      size += d.length;
      if (size <= MAX_COMMAND_OUTPUT) chunks.push(d);
      else if (!failure) {
        failure = new SignatureError(`--sign-command wrote more than ${MAX_COMMAND_OUTPUT} bytes: not a signature`);
        child.kill('SIGTERM');
      }
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      failure ??= new SignatureError(
        `--sign-command could not start ${shell}: ${systemErrorWords(err) ?? err.message}`,
        { cause: err },
      );
    });
    child.on('close', (code, signal) => {
      if (failure) return reject(failure);
      if (signal) return reject(new SignatureError(`--sign-command was killed by signal ${signal}`));
      if (code !== 0) return reject(new SignatureError(`--sign-command failed (exit ${code})`));
      resolve(Buffer.concat(chunks));
    });
    // A command that does not read all of the message (it failed early) closes its stdin: its exit says why.
    child.stdin!.on('error', () => {});
    child.stdin!.end(message);
  });
}
