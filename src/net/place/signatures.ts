/**
 * Signed places (docs/distributed.md, "Signed places"): a place may require its tokens to be
 * signed (`signers: FILE`, an OpenSSH allowed_signers file, and/or `from: [HOST...]`, the public
 * keys of those hosts' `key`s, each with its host's name as principal); a host with a `key` signs
 * the tokens its run sends to other hosts (Place.planPart, for an outbox).
 *
 * The keys are read once per run: a signer per key file, the allowed signers per place.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { NetError, SignatureError, systemErrorWords } from '../../base/errors.js';
import type { PacketHeader } from '../../packet/index.js';
import { openPayloadSync } from '../../queue/job-headers.js';
import { AllowedSigners } from '../../sign/allowed-signers.js';
import { HeaderSigner } from '../../sign/header-signer.js';
import { loadPrivateKey } from '../../sign/private-key.js';
import { type PublicKey, parsePublicKeyLine } from '../../sign/public-key.js';
import { closeQuietly, readSomeSync } from '../../sys/io.js';
import { openExisting } from '../../sys/untrusted.js';
import { hostKeyPath } from '../model/hosts.js';
import type { NetModel, PlaceSpec } from '../model/model.js';
import { sealOfPayload } from './payload.js';
import type { TokenContent } from './token.js';

/** Whether a place requires its tokens to be signed. */
export function isSignedPlace(spec: PlaceSpec): boolean {
  return spec.signers !== undefined || (spec.from?.length ?? 0) > 0;
}

/** The public half of a host's key: PATH.pub when there is one (a verifier may lack the private key). */
export function publicKeyOf(keyPath: string): PublicKey {
  let line: string | undefined;
  try {
    line = fs.readFileSync(`${keyPath}.pub`, 'utf8');
  } catch {
    line = undefined;
  }
  try {
    return line !== undefined ? parsePublicKeyLine(line.trim()) : loadPrivateKey(keyPath).publicKey;
  } catch (err) {
    if (err instanceof SignatureError)
      throw new NetError(`cannot read the public key of ${keyPath} (${keyPath}.pub or the key itself): ${err.reason}`);
    throw err;
  }
}

/**
 * The signers a place lets in, or undefined when it requires no signature. A NetError of one
 * line when its file can't be read or a host's key has no public half here.
 */
export function placeSigners(net: NetModel, spec: PlaceSpec): AllowedSigners | undefined {
  if (!isSignedPlace(spec)) return undefined;
  const lines: string[] = [];
  const sources: string[] = [];
  if (spec.signers !== undefined) {
    try {
      lines.push(fs.readFileSync(spec.signers, 'utf8'));
    } catch (err) {
      throw new NetError(
        `Place ${spec.name}: signers: cannot read ${spec.signers}: ${systemErrorWords(err) ?? (err as Error).message}`,
      );
    }
    sources.push(spec.signers);
  }
  for (const host of spec.from ?? []) {
    const key = hostKeyPath(net, host);
    if (key === undefined) throw new NetError(`Place ${spec.name}: from: host ${host} has no key`);
    let pk: PublicKey;
    try {
      pk = publicKeyOf(key);
    } catch (err) {
      throw new NetError(`Place ${spec.name}: from: host ${host}: ${(err as Error).message}`);
    }
    lines.push(`${host} namespaces="fspl" ${pk.type} ${pk.blob.toString('base64')}`);
  }
  if (spec.from?.length) sources.push(`the keys of host${spec.from.length > 1 ? 's' : ''} ${spec.from.join(', ')}`);
  try {
    return AllowedSigners.parse(lines.join('\n'), sources.join(' or '));
  } catch (err) {
    if (err instanceof SignatureError) throw new NetError(`Place ${spec.name}: signers: ${err.reason}`);
    throw err;
  }
}

/** One signer per key file in this process: a key is read (and its passphrase refused) once per run. */
const signers = new Map<string, HeaderSigner>();

export function signerOf(keyPath: string): HeaderSigner {
  let s = signers.get(keyPath);
  if (!s) {
    try {
      s = HeaderSigner.load(keyPath);
    } catch (err) {
      if (err instanceof SignatureError) throw new NetError(`Cannot sign tokens with ${keyPath}: ${err.reason}`);
      throw err;
    }
    signers.set(keyPath, s);
  }
  return s;
}

const CHUNK = 1 << 20;

/** SHA-512 of a token's payload, read from its sources (as sealOfPayload reads them). */
export function sha512OfPayload(p: TokenContent['payload']): Buffer {
  const hash = createHash('sha512');
  if (!p) return hash.digest();
  if ('data' in p) return hash.update(p.data).digest();
  if (!('tokens' in p) && !('path' in p))
    throw new TypeError('a signed token needs its payload as a file or tokens, not a descriptor');
  const files = 'tokens' in p ? p.tokens : [p.path];
  const buf = Buffer.allocUnsafe(CHUNK);
  for (const file of files) {
    // Our own descriptors, closed after: their offsets may move. A token opens after its header.
    const fd = 'tokens' in p ? openPayloadSync(file) : openExisting(file).fd;
    try {
      for (;;) {
        const n = readSomeSync(fd, buf, 0, buf.length);
        if (n === 0) break;
        hash.update(buf.subarray(0, n));
      }
    } finally {
      closeQuietly(fd);
    }
  }
  return hash.digest();
}

/** A header sealed for this payload, and signed with the key at `keyPath` when there is one. */
export function sealAndSign(
  header: PacketHeader,
  payload: TokenContent['payload'],
  keyPath: string | undefined,
): PacketHeader {
  header.seal = sealOfPayload(payload);
  return keyPath === undefined ? header : signTokenHeader(header, keyPath, payload);
}

/** A sealed header signed with the key at `keyPath` for this payload. */
export function signTokenHeader(header: PacketHeader, keyPath: string, payload: TokenContent['payload']): PacketHeader {
  return signerOf(keyPath).sign(header, sha512OfPayload(payload));
}

/** What `net check --host` says of one signing matter: a place's signers, or this host's key. */
export interface SigningCheck {
  what: string;
  error?: string;
  detail?: string;
}

/**
 * For `net check --host`: in a host's view (hostView), whether its signed places' signers can be
 * read, and whether its key can sign the tokens it sends to other hosts.
 */
export function signingChecks(view: NetModel): SigningCheck[] {
  const out: SigningCheck[] = [];
  const keys = new Set<string>();
  for (const spec of view.places.values()) {
    if (spec.remote?.key !== undefined) keys.add(spec.remote.key);
    if (spec.remote !== undefined || !isSignedPlace(spec)) continue;
    const what = `place ${spec.name} requires signatures`;
    try {
      const s = placeSigners(view, spec)!;
      out.push({ what, detail: `${s.size} signer${s.size === 1 ? '' : 's'}: ${s.source}` });
    } catch (err) {
      out.push({ what, error: (err as Error).message });
    }
  }
  for (const key of keys) {
    const what = `tokens sent to other hosts are signed with ${key}`;
    try {
      out.push({ what, detail: signerOf(key).publicKey.fingerprint });
    } catch (err) {
      out.push({ what, error: (err as Error).message });
    }
  }
  return out;
}
