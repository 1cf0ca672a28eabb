/**
 * The FSPL_* variables of a job: printed by stdin-info/queue-info and exported to the command by
 * the process commands, in one fixed order.
 */
import type { PacketHeader } from './packet/types.js';
import { rfc3339Local, rfc3339Utc } from './time.js';

/** Where a job lives, for the FSPL_JOB_* variables (absent for stdin-* commands). */
export interface JobLocation {
  /** The queue directory exactly as the user gave it. */
  queuedir: string;
  /** The file name inside jobs/. */
  filename: string;
}

export type JobVariable = [name: Buffer, value: Buffer];

const b = (s: string) => Buffer.from(s, 'utf8');

export function jobVariables(header: PacketHeader, where?: JobLocation): JobVariable[] {
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
  }
  if (header.cmd.kind === 'Command') {
    header.cmd.params.forEach((p, i) => vars.push([b(`FSPL_PARAM_${i + 1}`), Buffer.from(p)]));
    for (const [k, v] of header.cmd.env) vars.push([Buffer.concat([b('FSPL_SET_'), k]), Buffer.from(v)]);
  }
  return vars;
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
  // The job's variables (a later one of the same name wins), sorted, merged into the inherited
  // ones, sorted once per environment: a queue run passes the same object for every job, and
  // sorting all of it each time was a measurable part of the per-job cost.
  const own = new Map<string, string>();
  for (const [k, v] of vars) own.set(k.toString('utf8'), v.toString('utf8'));
  const ownKeys = [...own.keys()].sort();
  const baseKeys = sortedKeys(base);
  const env: Record<string, string> = {};
  let i = 0;
  let j = 0;
  while (i < baseKeys.length || j < ownKeys.length) {
    const a = baseKeys[i];
    const b = ownKeys[j];
    if (b === undefined || (a !== undefined && a < b)) {
      const v = base[a!];
      if (v !== undefined) env[a!] = v;
      i++;
    } else {
      env[b] = own.get(b)!;
      j++;
      if (a === b) i++; // the job's value replaces the inherited one
    }
  }
  return env;
}

const sortedKeysCache = new WeakMap<object, { keys: string[]; sorted: string[] }>();

/** Object.keys(env), sorted; remembered per object for as long as its keys stay the same. */
function sortedKeys(env: NodeJS.ProcessEnv): string[] {
  const keys = Object.keys(env);
  const cached = sortedKeysCache.get(env);
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
