/**
 * OpenSSH's allowed_signers file (ssh-keygen(1), "ALLOWED SIGNERS"; sshsig.c): one signer a line,
 * `principals [options] keytype base64 [comment]`, with `#` comments and blank lines. A key is let
 * in by the first line that lists it and allows it for the namespace at the time asked, as
 * `ssh-keygen -Y verify` judges it.
 */
import fs from 'node:fs';
import { SignatureError, systemErrorWords } from '../base/errors.js';
import { matchPatternList } from './pattern.js';
import type { PublicKey } from './public-key.js';
import { decodeKeyBase64 } from './public-key.js';
import { parseSignerOptions, type SignerOptions } from './signer-options.js';

/** One signer line, read. */
interface Entry extends SignerOptions {
  line: number;
  /** The principals field as written (quotes removed). */
  principals: string;
  /** The key blob, compared byte for byte with a signature's key (SSH blobs are canonical). */
  blob: Buffer;
}

/** The key type names sshkey_read knows: a field that is none of them is the options field. */
const KEY_TYPE = new RegExp(
  `^(${[
    'ssh-(ed25519|rsa|dss)',
    'ecdsa-sha2-nistp(256|384|521)',
    'sk-(ecdsa-sha2-nistp256|ssh-ed25519)@openssh\\.com',
    'ssh-xmss@openssh\\.com',
  ].join('|')})(-cert-v01@openssh\\.com)?$`,
);

export class AllowedSigners {
  private constructor(
    readonly source: string,
    private readonly entries: readonly Entry[],
  ) {}

  /** The signers of `text`; a malformed line is an error naming `source` and the line. */
  static parse(text: string, source: string): AllowedSigners {
    const entries: Entry[] = [];
    text.split('\n').forEach((raw, i) => {
      const entry = parseLine(raw.replace(/\r$/, ''), i + 1, source);
      if (entry) entries.push(entry);
    });
    return new AllowedSigners(source, entries);
  }

  /** The signers of a file; one that can't be read is an error naming it. */
  static load(path: string): AllowedSigners {
    let text: string;
    try {
      text = fs.readFileSync(path, 'utf8');
    } catch (err) {
      throw new SignatureError(
        `cannot read allowed signers ${path}: ${systemErrorWords(err) ?? (err as Error).message}`,
        { cause: err },
      );
    }
    return AllowedSigners.parse(text, path);
  }

  /** How many signer lines it has. */
  get size(): number {
    return this.entries.length;
  }

  /**
   * The line that lets `key` sign for `namespace` at `at` (and, when given, lists `principal`),
   * or a SignatureError saying why none does: the first line's refusal when the key is listed.
   */
  check(key: PublicKey, namespace: string, at: Date, principal?: string): { principal: string; line: number } {
    const fingerprint = key.fingerprint;
    const seconds = Math.floor(at.getTime() / 1000);
    let refusal: string | undefined;
    for (const e of this.entries) {
      // cert-authority lines vouch for certificates, which fspl does not take: no plain key matches one.
      if (e.certAuthority || !e.blob.equals(key.blob)) continue;
      if (principal !== undefined && matchPatternList(principal, e.principals) !== 1) continue;
      const why = refuses(e, namespace, seconds);
      if (why === undefined) return { principal: e.principals, line: e.line };
      refusal ??= `key ${fingerprint} ${why} (${this.source} line ${e.line})`;
    }
    const forWhom = principal === undefined ? '' : ` for principal ${principal}`;
    throw new SignatureError(refusal ?? `signed by a key not in ${this.source}${forWhom}: ${fingerprint}`, {
      fingerprint,
    });
  }
}

/** Why a line that lists the key does not let it sign now, or undefined when it does. */
function refuses(e: Entry, namespace: string, seconds: number): string | undefined {
  if (e.namespaces !== undefined && matchPatternList(namespace, e.namespaces) !== 1)
    return `is not allowed to sign for namespace ${namespace}`;
  if (e.validAfter !== undefined && seconds < e.validAfter) return `is valid only after ${iso(e.validAfter)}`;
  if (e.validBefore !== undefined && seconds > e.validBefore) return `is valid only before ${iso(e.validBefore)}`;
  return undefined;
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

/** One line read, or undefined for a blank or comment line. */
function parseLine(raw: string, line: number, source: string): Entry | undefined {
  const fail = (why: string): never => {
    throw new SignatureError(`${source} line ${line}: ${why}`);
  };
  const text = raw.replace(/^[ \t\r\n]+/, '');
  if (text === '' || text.startsWith('#')) return undefined;
  const p = principalsField(text);
  if (!p || p.value === '') return fail('invalid line (want "PRINCIPALS [OPTIONS] KEYTYPE BASE64")');
  let rest = p.rest;
  let options = '';
  if (!KEY_TYPE.test(firstWord(rest))) {
    const end = optionsEnd(rest);
    if (end < 0) return fail('invalid options (a quote is not closed)');
    options = rest.slice(0, end);
    rest = rest.slice(end).replace(/^[ \t]+/, '');
    if (rest === '') return fail('missing key');
  }
  const [type, b64] = rest.split(/[ \t]+/);
  if (!type || !KEY_TYPE.test(type) || !b64) return fail('invalid key');
  let opts: SignerOptions;
  let blob: Buffer;
  try {
    blob = decodeKeyBase64(type, b64);
    opts = parseSignerOptions(options);
  } catch (err) {
    return fail(err instanceof SignatureError ? err.reason : `bad options: ${(err as Error).message}`);
  }
  return { ...opts, line, principals: p.value, blob };
}

/** strdelimw: the first field, a quoted part standing as one word; undefined when nothing follows it. */
function principalsField(text: string): { value: string; rest: string } | undefined {
  const stop = text.search(/[ \t\r\n"]/);
  if (stop < 0) return undefined;
  if (text[stop] !== '"') return { value: text.slice(0, stop), rest: text.slice(stop).replace(/^[ \t\r\n]+/, '') };
  const close = text.indexOf('"', stop + 1);
  if (close < 0) return undefined;
  return {
    value: text.slice(0, stop) + text.slice(stop + 1, close),
    rest: text.slice(close + 1).replace(/^[ \t\r\n]+/, ''),
  };
}

function firstWord(s: string): string {
  return s.split(/[ \t]/, 1)[0]!;
}

/** sshkey_advance_past_options: where the options end, at the first unquoted blank (-1: a quote left open). */
function optionsEnd(s: string): number {
  let quoted = false;
  let i = 0;
  for (; i < s.length && (quoted || (s[i] !== ' ' && s[i] !== '\t')); i++) {
    if (s[i] === '\\' && s[i + 1] === '"') i++;
    else if (s[i] === '"') quoted = !quoted;
  }
  return quoted ? -1 : i;
}
