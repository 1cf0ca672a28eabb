/**
 * allowed_signers as ssh-keygen reads it: principals, options (namespaces, validity,
 * cert-authority), comments and malformed lines; each verdict compared with
 * `ssh-keygen -Y verify` on the same file where the two can be compared.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SignatureError } from '../../src/base/errors.js';
import { AllowedSigners, armor, type PublicKey, parsePublicKeyLine, signMessage } from '../../src/sign/index.js';
import { parseSignerTime } from '../../src/sign/signer-options.js';
import { describeIfPresent } from '../gate.js';
import { GATE, keygenVerify, MISSING, makeKey, pubLine, suiteDir } from './keys.js';

const MESSAGE = Buffer.from('the header of job 7\n');
const NOW = new Date();

describeIfPresent('allowed_signers', MISSING, GATE, () => {
  let dir: string;
  let a: { file: string; line: string; key: PublicKey; sig: string };
  let b: { file: string; line: string; key: PublicKey; sig: string };
  let other: { file: string; line: string; key: PublicKey; sig: string };

  const signer = async (name: string) => {
    const file = makeKey(dir, name, ['-t', 'ed25519']);
    const sig = path.join(dir, `${name}.sig`);
    fs.writeFileSync(sig, armor((await signMessage(MESSAGE, { key: file })).blob));
    return { file, line: pubLine(file), key: parsePublicKeyLine(pubLine(file)), sig };
  };
  beforeAll(async () => {
    dir = suiteDir();
    [a, b, other] = [await signer('a'), await signer('b'), await signer('other')];
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /**
   * Our verdict on `who` signing for `namespace` (default fspl) at `at`, checked against
   * ssh-keygen's for principal `principal`: the same, or the test fails. Returns ours.
   */
  function judge(
    text: string,
    who: typeof a,
    principal: string,
    namespace = 'fspl',
    at = NOW,
  ): { ok: true; line: number; principal: string } | { ok: false; why: string } {
    const file = path.join(dir, 'allowed_signers');
    fs.writeFileSync(file, text);
    let ours: ReturnType<typeof judge>;
    try {
      ours = { ok: true, ...AllowedSigners.load(file).check(who.key, namespace, at, principal) };
    } catch (err) {
      expect(err).toBeInstanceOf(SignatureError);
      ours = { ok: false, why: (err as SignatureError).message };
    }
    const stamp = at.toISOString().replace(/[-:T]/g, '').slice(0, 14);
    const theirs = keygenVerify({
      allowed: file,
      principal,
      namespace,
      sig: who.sig,
      message: MESSAGE,
      at: `${stamp}Z`,
    });
    // ssh-keygen can only check namespace fspl here: the signature is for fspl.
    if (namespace === 'fspl')
      expect(ours.ok, `ours: ${JSON.stringify(ours)}; ssh-keygen: ${theirs.said}`).toBe(theirs.ok);
    return ours;
  }

  test('a listed key is let in, with its line and principals as written', () => {
    const text = `# the signers\n\nalice@x,al* ${a.line}\n  bob@x ${b.line}\n`;
    expect(judge(text, a, 'alice@x')).toEqual({ ok: true, line: 3, principal: 'alice@x,al*' });
    expect(judge(text, a, 'alfred')).toEqual({ ok: true, line: 3, principal: 'alice@x,al*' });
    expect(judge(text, b, 'bob@x')).toEqual({ ok: true, line: 4, principal: 'bob@x' });
    expect(AllowedSigners.parse(text, 'x').size).toBe(2);
    // Without a principal asked, the key alone decides (ssh-keygen -Y find-principals).
    expect(AllowedSigners.parse(text, 'x').check(b.key, 'fspl', NOW)).toEqual({ principal: 'bob@x', line: 4 });
  });

  test('a key not listed is refused, naming the file and the key', () => {
    const text = `alice@x ${a.line}\n`;
    const v = judge(text, other, 'alice@x');
    expect(v).toEqual({
      ok: false,
      why:
        `signed by a key not in ${path.join(dir, 'allowed_signers')}` +
        ` for principal alice@x: ${other.key.fingerprint}`,
    });
    const err = (() => {
      try {
        AllowedSigners.parse(text, '/etc/x/allowed_signers').check(other.key, 'fspl', NOW);
      } catch (e) {
        return e as SignatureError;
      }
    })();
    expect(err?.message).toBe(`signed by a key not in /etc/x/allowed_signers: ${other.key.fingerprint}`);
    expect(err?.fingerprint).toBe(other.key.fingerprint);
    expect(err?.code).toBe('ERR_SIGNATURE');
  });

  test('a negated principal pattern keeps the line from that principal', () => {
    expect(judge(`*,!mallory ${a.line}\n`, a, 'mallory')).toMatchObject({ ok: false });
    expect(judge(`*,!mallory ${a.line}\n`, a, 'alice')).toMatchObject({ ok: true });
    expect(judge(`"alice smith" ${a.line}\n`, a, 'alice smith')).toEqual({
      ok: true,
      line: 1,
      principal: 'alice smith',
    });
  });

  test('namespaces="…": fspl is let in, git-only is refused with the line named', () => {
    const src = path.join(dir, 'allowed_signers');
    expect(judge(`alice@x namespaces="fspl" ${a.line}\n`, a, 'alice@x')).toMatchObject({ ok: true });
    expect(judge(`alice@x namespaces="git,f?pl" ${a.line}\n`, a, 'alice@x')).toMatchObject({ ok: true });
    expect(judge(`alice@x NAMESPACES="git" ${a.line}\n`, a, 'alice@x')).toEqual({
      ok: false,
      why: `key ${a.key.fingerprint} is not allowed to sign for namespace fspl (${src} line 1)`,
    });
    expect(judge(`alice@x namespaces="f*,!fspl" ${a.line}\n`, a, 'alice@x')).toMatchObject({ ok: false });
    expect(judge(`alice@x namespaces="git" ${a.line}\n`, a, 'alice@x', 'git')).toMatchObject({ ok: true });
  });

  test('valid-after and valid-before, with and without Z, judged at the time asked', () => {
    const src = path.join(dir, 'allowed_signers');
    expect(judge(`alice@x valid-before="20200101Z" ${a.line}\n`, a, 'alice@x')).toEqual({
      ok: false,
      why: `key ${a.key.fingerprint} is valid only before 2020-01-01T00:00:00Z (${src} line 1)`,
    });
    expect(judge(`alice@x valid-after="20990101123456Z" ${a.line}\n`, a, 'alice@x')).toEqual({
      ok: false,
      why: `key ${a.key.fingerprint} is valid only after 2099-01-01T12:34:56Z (${src} line 1)`,
    });
    expect(judge(`alice@x valid-after="20200101",valid-before="20990101" ${a.line}\n`, a, 'alice@x')).toMatchObject({
      ok: true,
    });
    expect(judge(`alice@x valid-before="209901011200" ${a.line}\n`, a, 'alice@x')).toMatchObject({ ok: true });
    expect(judge(`alice@x valid-after="20200101" ${a.line}\n`, a, 'alice@x')).toMatchObject({ ok: true });
    // Judged at a time given, not now: the same line refuses a key asked about in 2019.
    expect(
      judge(`alice@x valid-after="20200101Z" ${a.line}\n`, a, 'alice@x', 'fspl', new Date('2019-06-01T00:00:00Z')),
    ).toMatchObject({ ok: false });
    // At the very second of valid-before the key is still valid; one second after, not.
    const edge = `alice@x valid-before="20300101000000Z" ${a.line}\n`;
    expect(judge(edge, a, 'alice@x', 'fspl', new Date('2030-01-01T00:00:00Z'))).toMatchObject({ ok: true });
    expect(judge(edge, a, 'alice@x', 'fspl', new Date('2030-01-01T00:00:01Z'))).toMatchObject({ ok: false });
  });

  test('times without Z are local time, as ssh-keygen reads them', () => {
    expect(parseSignerTime('20250304')).toBe(new Date(2025, 2, 4).getTime() / 1000);
    expect(parseSignerTime('202503040506')).toBe(new Date(2025, 2, 4, 5, 6).getTime() / 1000);
    expect(parseSignerTime('20250304050607z')).toBe(Date.UTC(2025, 2, 4, 5, 6, 7) / 1000);
    expect(parseSignerTime('20250304UTC')).toBe(Date.UTC(2025, 2, 4) / 1000);
    for (const bad of ['2025030', '20251304', '2025030405', 'x0250304', '20250304 ', ''])
      expect(parseSignerTime(bad), bad).toBeUndefined();
  });

  test('of several lines for one key, the first that allows it wins', () => {
    const text =
      `alice,git namespaces="git" ${a.line}\nalice,old valid-before="20200101" ${a.line}\n` +
      `alice ${a.line}\nalice,later ${a.line}\n`;
    expect(judge(text, a, 'alice')).toEqual({ ok: true, line: 3, principal: 'alice' });
    expect(judge(text, a, 'later')).toEqual({ ok: true, line: 4, principal: 'alice,later' });
    expect(judge(text, a, 'git')).toMatchObject({
      ok: false,
      why: expect.stringContaining('not allowed to sign for namespace fspl'),
    });
    expect(judge(text, a, 'nobody')).toMatchObject({ ok: false, why: expect.stringContaining('for principal nobody') });
    // None allows it: the first line's refusal is the one reported.
    const none = AllowedSigners.parse(text.split('\n').slice(0, 2).join('\n'), 'S');
    expect(() => none.check(a.key, 'fspl', NOW)).toThrow(
      `key ${a.key.fingerprint} is not allowed to sign for namespace fspl (S line 1)`,
    );
  });

  test('a cert-authority line does not let in the plain key it names', () => {
    expect(judge(`alice@x cert-authority ${a.line}\n`, a, 'alice@x')).toMatchObject({ ok: false });
    expect(judge(`alice@x cert-authority,namespaces="fspl" ${a.line}\nalice@x ${a.line}\n`, a, 'alice@x')).toEqual({
      ok: true,
      line: 2,
      principal: 'alice@x',
    });
  });

  test('CRLF line ends and tabs are taken', () => {
    expect(judge(`# c\r\n\r\nalice@x\tnamespaces="fspl"\t${a.line}\r\n`, a, 'alice@x')).toMatchObject({
      ok: true,
      line: 3,
    });
  });
});

describe('allowed_signers: malformed files', () => {
  const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHDGSDtgXWAexSGOB6L1AfXEmDh8MEsHvuqbdlOt5jnr';
  const bad: Array<[string, RegExp]> = [
    ['alice@x', /^S line 2: invalid line/],
    ['alice@x namespaces="fspl"', /^S line 2: missing key/],
    [`alice@x frobnicate ${key}`, /^S line 2: bad options: unknown key option/],
    [`alice@x namespaces=fspl ${key}`, /^S line 2: bad options: missing start quote/],
    [`alice@x namespaces="fspl ${key}`, /^S line 2: invalid options/],
    [`alice@x namespaces="a",namespaces="b" ${key}`, /^S line 2: bad options: multiple "namespaces" clauses/],
    [`alice@x valid-after="2020" ${key}`, /^S line 2: bad options: invalid "valid-after" time/],
    [
      `alice@x valid-after="20300101",valid-before="20200101" ${key}`,
      /^S line 2: bad options: "valid-before" time is before "valid-after"/,
    ],
    ['alice@x ssh-ed25519 !!!!', /^S line 2: malformed ssh-ed25519 key/],
    [
      'alice@x ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIHDGSDtgXWAexSGOB6L1AfXEmDh8MEsHvuqbdlOt5jnr',
      /^S line 2: key type mismatch/,
    ],
    ['alice@x ssh-ed25519 AAAA', /^S line 2: malformed public key/],
    [`alice@x namespaces="fspl",`, /^S line 2: missing key/],
    [`alice@x namespaces="fspl", ${key}`, /^S line 2: bad options: unexpected end-of-options/],
  ];
  for (const [line, want] of bad) {
    test(JSON.stringify(line), () => {
      expect(() => AllowedSigners.parse(`# first\n${line}\n`, 'S')).toThrow(want);
      expect(() => AllowedSigners.parse(`# first\n${line}\n`, 'S')).toThrow(SignatureError);
    });
  }

  test('a file that cannot be read is an error naming it', () => {
    expect(() => AllowedSigners.load('/nonexistent/allowed_signers')).toThrow(
      'cannot read allowed signers /nonexistent/allowed_signers: No such file or directory',
    );
  });

  test('an unsupported key type on a line is kept (it can match no signature we take), not an error', () => {
    const dss =
      'ssh-dss AAAAB3NzaC1kc3MAAACBAP1/U4EddRIpUt9KnC7s5Of2EbdSPO9EAMMeP4C2USZpRV1AIlH7WT2NWPq/xfW6MPbLm1' +
      'Vs14E7gB00b/JmYLdrmVClpJ+f6AR7ECLCT7up1/63xhv4O1fnxqimFQ8E+4P208UewwI1VBNaFpEy9nXzrith1yrv8iIDGZ3R' +
      'SAHHAAAAFQCXYFCPFSMLzLKSuYKi64QL8Fgc9QAAAIEA9+GghdabPd7LvKtcNrhXuXmUr7v6OuqC+VdMCz0HgmdRWVeOutRZT+' +
      'ZxBxCBgLRJFnEj6EwoFhO3zwkyjMim4TwWeotUfI0o4KOuHiuzpnWRbqN/C/ohNWLx+2J6ASQ7zKTxvqhRkImog9/hWuWfBpKL' +
      'Zl6Ae1UlZAFMO/7PSSoAAACBAOoWD8fAfzpX76C8fQ0bZm6ul/xrw/2JVe4GWJ8vLk6gcx7t2KH3ZZx1NVa0f0N8ZKxEAEfkq4' +
      'YSjXiHZl13jlglsXn9+ApgJR00JnY1nyLmyDgvmKdpiSUEG9DvKo1ogYT8lAYC+ZLHIH30EOL3dRN1Sa75CYHGdhn8ckgNWZ4P';
    const s = AllowedSigners.parse(`old ${dss}\n`, 'S');
    expect(s.size).toBe(1);
  });
});
