/**
 * The options field of an allowed_signers line (sshsig.c sshsigopt_parse): `cert-authority`,
 * `namespaces="patterns"`, `valid-after="time"` and `valid-before="time"`, comma-separated, names
 * case-insensitive, each at most once; anything else is an error, as it is for ssh-keygen.
 */

export interface SignerOptions {
  certAuthority: boolean;
  /** A pattern list (pattern.ts) the namespace must match, when given. */
  namespaces?: string;
  /** Seconds since the epoch: before this the key is not valid yet. */
  validAfter?: number;
  /** Seconds since the epoch: after this the key is no longer valid. */
  validBefore?: number;
}

/** The options of one line, or the reason they are bad (thrown by the caller with the line's place). */
export function parseSignerOptions(text: string): SignerOptions {
  const out: SignerOptions = { certAuthority: false };
  let rest = text;
  while (rest !== '') {
    const lower = rest.toLowerCase();
    if (lower.startsWith('cert-authority')) {
      out.certAuthority = true;
      rest = rest.slice('cert-authority'.length);
    } else {
      const name = ['namespaces', 'valid-after', 'valid-before'].find((n) => lower.startsWith(`${n}=`));
      if (!name) throw new Error('unknown key option');
      const { value, after } = dequote(rest.slice(name.length + 1));
      rest = after;
      setOption(out, name, value);
    }
    if (rest === '') break;
    if (rest[0] !== ',') throw new Error('unknown key option');
    rest = rest.slice(1);
    if (rest === '') throw new Error('unexpected end-of-options');
  }
  if (out.validAfter !== undefined && out.validBefore !== undefined && out.validBefore <= out.validAfter)
    throw new Error('"valid-before" time is before "valid-after"');
  return out;
}

/** One name=value clause recorded; a second of the same name is refused as ssh-keygen refuses it. */
function setOption(out: SignerOptions, name: string, value: string): void {
  if (name === 'namespaces') {
    if (out.namespaces !== undefined) throw new Error('multiple "namespaces" clauses');
    out.namespaces = value;
    return;
  }
  const key = name === 'valid-after' ? 'validAfter' : 'validBefore';
  if (out[key] !== undefined) throw new Error(`multiple "${name}" clauses`);
  const t = parseSignerTime(value);
  if (t === undefined || t === 0) throw new Error(`invalid "${name}" time`);
  out[key] = t;
}

/** opt_dequote: a value in double quotes, `\"` standing for a quote; what follows it is returned too. */
function dequote(s: string): { value: string; after: string } {
  if (s[0] !== '"') throw new Error('missing start quote');
  let value = '';
  let i = 1;
  for (; i < s.length && s[i] !== '"'; i++) {
    if (s[i] === '\\' && s[i + 1] === '"') i++;
    value += s[i];
  }
  if (i >= s.length) throw new Error('missing end quote');
  return { value, after: s.slice(i + 1) };
}

/**
 * parse_absolute_time: YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, in UTC with a `Z` (or `UTC`)
 * suffix, else in local time as ssh-keygen reads it. Seconds since the epoch, or undefined.
 */
export function parseSignerTime(text: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})?)?(z|utc)?$/i.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [h, mi, s] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  // strptime's ranges; mktime then carries a 31st of February into March, and so does Date.
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 61) return undefined;
  const date = new Date(0);
  if (m[7]) {
    date.setUTCFullYear(y, mo - 1, d);
    date.setUTCHours(h, mi, s, 0);
  } else {
    date.setFullYear(y, mo - 1, d);
    date.setHours(h, mi, s, 0);
  }
  return Math.floor(date.getTime() / 1000);
}
