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
  const merged = new Map<string, string>();
  for (const [k, v] of Object.entries(base)) if (v !== undefined) merged.set(k, v);
  for (const [k, v] of vars) merged.set(k.toString('utf8'), v.toString('utf8'));
  const env: Record<string, string> = {};
  for (const k of [...merged.keys()].sort()) env[k] = merged.get(k)!;
  return env;
}

/** The variables as an object of strings, for JS callers (bytes that are not UTF-8 replaced). */
export function variablesRecord(vars: JobVariable[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of vars) out[k.toString('utf8')] = v.toString('utf8');
  return out;
}
