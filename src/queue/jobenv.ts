/**
 * The FSPL_* variables of a job: printed by stdin-info/queue-info and exported to the command by
 * the process commands, in one fixed order.
 */

import { rfc3339Local, rfc3339Utc } from '../packet/time.js';
import type { PacketHeader } from '../packet/types.js';
import type { Signer } from '../sign/packet-signature.js';
import type { JobLocation, JobVariable } from './types.js';

export type { JobLocation, JobVariable } from './types.js';

const b = (s: string) => Buffer.from(s, 'utf8');

/** The signer's variables (an extension), after the reference's: who signed a checked job. */
function signerVariables(signer: Signer | undefined): EnvVariable[] {
  return signer
    ? [
        ['FSPL_JOB_SIGNER', signer.principal],
        ['FSPL_JOB_SIGNER_KEY', signer.fingerprint],
      ]
    : [];
}

export function jobVariables(header: PacketHeader, where?: JobLocation, signer?: Signer): JobVariable[] {
  const vars: JobVariable[] = [
    [b('FSPL_SEQ'), b(header.seq.toString())],
    [b('FSPL_CTIME_SECS'), b(header.ctime.secs.toString())],
    [b('FSPL_CTIME_NANOS'), b(String(header.ctime.nanos))],
    [b('FSPL_CTIME_RFC3339_UTC'), b(rfc3339Utc(header.ctime.secs))],
    [b('FSPL_CTIME_RFC3339_LOCAL'), b(rfc3339Local(header.ctime.secs))],
  ];
  if (where) {
    vars.push(
      [b('FSPL_JOB_FILENAME'), b(where.filename)],
      [b('FSPL_JOB_QUEUEDIR'), b(where.queuedir)],
      [b('FSPL_JOB_FULLPATH'), b(`${where.queuedir}/jobs/${where.filename}`)],
    );
    if (where.attempt !== undefined) vars.push([b('FSPL_JOB_ATTEMPT'), b(String(where.attempt))]);
  }
  if (header.cmd.kind === 'Command') {
    header.cmd.params.forEach((p, i) => vars.push([b(`FSPL_PARAM_${i + 1}`), Buffer.from(p)]));
    for (const [k, v] of header.cmd.env) vars.push([Buffer.concat([b('FSPL_SET_'), k]), Buffer.from(v)]);
  }
  for (const [k, v] of signerVariables(signer)) vars.push([b(k), b(v)]);
  return vars;
}

/** A variable as a child's environment takes it: bytes that are not UTF-8 replaced, as jobEnvironment does. */
export type EnvVariable = [name: string, value: string];

/** The last ctime formatted (tokens made in the same second share it), with the TZ it was for. */
let lastCtime: { secs: bigint; tz: string | undefined; utc: string; local: string } | undefined;

/**
 * jobVariables as strings, for a child's environment: the same names and values, in the same
 * order, that jobEnvironment makes of jobVariables (a net runner's command firing makes them per
 * firing: the Buffers of jobVariables, decoded again at once, and the time formatted per token,
 * were a large part of what building its environment cost).
 */
export function jobVariableStrings(header: PacketHeader, where?: JobLocation, signer?: Signer): EnvVariable[] {
  const secs = header.ctime.secs;
  const tz = process.env.TZ;
  if (lastCtime?.secs !== secs || lastCtime.tz !== tz)
    lastCtime = { secs, tz, utc: rfc3339Utc(secs), local: rfc3339Local(secs) };
  const vars: EnvVariable[] = [
    ['FSPL_SEQ', header.seq.toString()],
    ['FSPL_CTIME_SECS', secs.toString()],
    ['FSPL_CTIME_NANOS', String(header.ctime.nanos)],
    ['FSPL_CTIME_RFC3339_UTC', lastCtime.utc],
    ['FSPL_CTIME_RFC3339_LOCAL', lastCtime.local],
  ];
  if (where)
    vars.push(
      ['FSPL_JOB_FILENAME', where.filename],
      ['FSPL_JOB_QUEUEDIR', where.queuedir],
      ['FSPL_JOB_FULLPATH', `${where.queuedir}/jobs/${where.filename}`],
    );
  if (where?.attempt !== undefined) vars.push(['FSPL_JOB_ATTEMPT', String(where.attempt)]);
  if (header.cmd.kind === 'Command') {
    header.cmd.params.forEach((p, i) => vars.push([`FSPL_PARAM_${i + 1}`, utf8(p)]));
    // The prefix is ASCII: decoding it apart from the name gives what decoding them together does.
    for (const [k, v] of header.cmd.env) vars.push([`FSPL_SET_${utf8(k)}`, utf8(v)]);
  }
  if (signer) vars.push(...signerVariables(signer));
  return vars;
}

function utf8(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** The info format: NAME=VALUE lines, values raw (newlines and all). */
export function formatInfo(vars: JobVariable[]): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of vars) parts.push(k, b('='), v, b('\n'));
  return Buffer.concat(parts);
}

/**
 * A child's environment: the inherited one with the job's variables added or replaced, sorted by
 * name as the reference passes it. Node's process API takes strings, so bytes that are not valid
 * UTF-8 are replaced (documented in docs/compatibility.md).
 */
export function jobEnvironment(vars: JobVariable[], base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return childEnvironment(
    vars.map(([k, v]) => [k.toString('utf8'), v.toString('utf8')]),
    base,
  );
}

/** jobEnvironment of variables already strings (jobVariableStrings and others). */
export function childEnvironment(
  vars: readonly EnvVariable[],
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  mergeSorted(
    vars,
    sortedKeys(base),
    (k) => {
      const v = base[k];
      if (v !== undefined) env[k] = v;
      return true;
    },
    (k, v) => {
      env[k] = v;
      return true;
    },
  );
  return env;
}

/**
 * Walk the job's variables (a later one of the same name wins) merged into the inherited names
 * (sorted once per inherited object: a queue run passes the same object for every job), in name order: an
 * inherited name the job replaces is skipped. A callback returning false stops the walk (false).
 */
function mergeSorted(
  vars: readonly EnvVariable[],
  baseKeys: readonly string[],
  onBase: (name: string, at: number) => boolean,
  onOwn: (name: string, value: string) => boolean,
): boolean {
  const own = new Map<string, string>();
  for (const [k, v] of vars) own.set(k, v);
  const ownKeys = [...own.keys()].sort();
  let i = 0;
  let j = 0;
  while (i < baseKeys.length || j < ownKeys.length) {
    const a = baseKeys[i];
    const b = ownKeys[j];
    if (b === undefined || (a !== undefined && a < b)) {
      if (!onBase(a!, i++)) return false;
    } else {
      if (!onOwn(b, own.get(b)!)) return false;
      j++;
      if (a === b) i++; // the job's value replaces the inherited one
    }
  }
  return true;
}

/**
 * A child's environment as childEnvironment makes it, kept as its two parts (the inherited
 * object, the job's own variables) until the child is started: as an object for child_process,
 * or packed (NAME=value\0 each, sorted) for the addon's spawner, the inherited part of it packed
 * once per inherited object. A net runner starts a command per firing with the same inherited
 * object (its transition's): making the merged object and packing it again from that object cost
 * several times what merging the job's dozen variables into a packed base costs.
 */
export class ChildEnv {
  /** packed()'s result, once made: the start's size check (sys/exec-size.ts) and the spawn both take it. */
  private packedText: string | undefined | null = null;

  constructor(
    private readonly own: readonly EnvVariable[],
    private readonly base: Readonly<Record<string, string | undefined>> = process.env,
  ) {}

  /** As an object (what childEnvironment returns). */
  record(): Record<string, string> {
    return childEnvironment(this.own, this.base);
  }

  /** Packed, in the same order; undefined when a variable it holds has a NUL (no C string can). */
  packed(): string | undefined {
    if (this.packedText === null) this.packedText = this.pack();
    return this.packedText;
  }

  private pack(): string | undefined {
    const base = packedBase(this.base);
    const own = new Map<string, string>();
    for (const [k, v] of this.own) own.set(k, v);
    const ownKeys = [...own.keys()].sort();
    // The inherited names below the job's first and above its last are packed as they are: two
    // spans joined once per inherited object (a job's dozen FSPL_* names fall between two of some
    // thirty inherited ones), and only the names between are merged, one by one, per job.
    const keys = base.keys;
    const lo = ownKeys.length === 0 ? keys.length : firstFrom(keys, 0, (key) => key >= ownKeys[0]!);
    const hi = ownKeys.length === 0 ? keys.length : firstFrom(keys, lo, (key) => key > ownKeys[ownKeys.length - 1]!);
    const before = span(base, 0, lo);
    const after = span(base, hi, keys.length);
    if (before === null || after === null) return undefined;
    let out = '';
    let i = lo;
    for (const k of ownKeys) {
      for (; i < hi && keys[i]! < k; i++) {
        const seg = base.segments[i]!;
        if (seg === null) return undefined;
        out += seg;
      }
      if (keys[i] === k) i++; // the job's value replaces the inherited one
      const v = own.get(k)!;
      if (k.includes('\0') || v.includes('\0')) return undefined;
      out += `${k}=${v}\0`;
    }
    for (; i < hi; i++) {
      const seg = base.segments[i]!;
      if (seg === null) return undefined;
      out += seg;
    }
    return before + out + after;
  }
}

/** The first index from `from` of sorted `keys` whose name is `past` (a test that stays true once true); keys.length if none. */
function firstFrom(keys: readonly string[], from: number, past: (key: string) => boolean): number {
  let lo = from;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (past(keys[mid]!)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The inherited segments from..to joined (made once per span of the object); null when one has a NUL. */
function span(base: PackedBase, from: number, to: number): string | null {
  const key = from * 0x100000000 + to;
  let joined = base.spans.get(key);
  if (joined === undefined) {
    const segs = base.segments.slice(from, to);
    joined = segs.includes(null) ? null : segs.join('');
    base.spans.set(key, joined);
  }
  return joined;
}

/**
 * An inherited object, packed: per name of sortedKeys, NAME=value\0 ('' for an undefined value,
 * null when it has a NUL), with the values it was made of.
 */
interface PackedBase {
  keys: readonly string[];
  values: Array<string | undefined>;
  segments: Array<string | null>;
  /** Runs of segments joined (span), by from * 2^32 + to. */
  spans: Map<number, string | null>;
}

const packedBases = new WeakMap<object, PackedBase>();

/** Packed once per object, again only when its names (sortedKeys) or values changed; a frozen object's never do. */
function packedBase(env: Readonly<Record<string, string | undefined>>): PackedBase {
  const keys = sortedKeys(env);
  const cached = packedBases.get(env);
  if (cached && cached.keys === keys && (Object.isFrozen(env) || keys.every((k, n) => env[k] === cached.values[n])))
    return cached;
  const values = keys.map((k) => env[k]);
  const segments = keys.map((k, n) => {
    const v = values[n];
    if (v === undefined) return '';
    return k.includes('\0') || v.includes('\0') ? null : `${k}=${v}\0`;
  });
  const made = { keys, values, segments, spans: new Map<number, string | null>() };
  packedBases.set(env, made);
  return made;
}

const sortedKeysCache = new WeakMap<object, { keys: string[]; sorted: string[] }>();

/**
 * Object.keys(env), sorted; remembered per object for as long as its keys stay the same (the
 * same array: callers may key on it), which a frozen object's always do.
 */
function sortedKeys(env: Readonly<Record<string, string | undefined>>): string[] {
  const cached = sortedKeysCache.get(env);
  if (cached && Object.isFrozen(env)) return cached.sorted;
  const keys = Object.keys(env);
  if (cached && cached.keys.length === keys.length && cached.keys.every((k, i) => k === keys[i])) return cached.sorted;
  const sorted = [...keys].sort();
  sortedKeysCache.set(env, { keys, sorted });
  return sorted;
}

/** The variables as an object of strings, for JS callers (bytes that are not UTF-8 replaced). */
export function variablesRecord(vars: JobVariable[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of vars) out[k.toString('utf8')] = v.toString('utf8');
  return out;
}
