/**
 * JSON renderings of packets, jobs and queue states, for `--json`: schemas and encoding rules (u64
 * as decimal strings, bytes as text or base64, snake_case, null for absent) in docs/json.md. Pure:
 * plain objects that JSON.stringify can write.
 */

import { isUtf8 } from 'node:buffer';
import { rfc3339Local, rfc3339Utc } from './packet/time.js';
import type { Bytes, Ctime, PacketHeader } from './packet/types.js';
import { type JobLocation, jobVariables } from './queue/jobenv.js';
import type { JobEntry } from './queue/jobs.js';
import { claimedSigner, type Signer } from './sign/packet-signature.js';
import type { SeqRange } from './status/ranges.js';
import type { QueueStatus, StatusJob } from './status/report.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A byte string: text when it is valid UTF-8, otherwise its bytes in base64. */
export type JsonBytes = string | { base64: string };

export interface JsonCtime {
  [key: string]: JsonValue;
  /** Seconds since the epoch (signed 64-bit), as a decimal string. */
  secs: string;
  /** Nanoseconds within the second. */
  nanos: number;
  /** Whole seconds, UTC, e.g. 2030-01-02T03:04:05Z (as FSPL_CTIME_RFC3339_UTC). */
  rfc3339_utc: string;
  /** Whole seconds, local time with offset (as FSPL_CTIME_RFC3339_LOCAL and queue-ls). */
  rfc3339_local: string;
}

export interface JsonHeader {
  [key: string]: JsonValue;
  seq: string;
  ctime: JsonCtime;
  /** 'Command', 'NOP' or 'Fail'. */
  type: string;
  /** Job parameters (empty for NOP and Fail). */
  params: JsonBytes[];
  /** FSPL_SET_ variables in stored order, names without the prefix (empty for NOP and Fail). */
  env: Array<{ name: JsonBytes; value: JsonBytes }>;
}

/** Bytes as a JSON string if valid UTF-8, else `{ base64 }`. */
export function bytesToJson(b: Bytes): JsonBytes {
  const buf = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return isUtf8(buf) ? buf.toString('utf8') : { base64: buf.toString('base64') };
}

/** The reverse of bytesToJson. */
export function bytesFromJson(v: JsonBytes): Buffer {
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.from(v.base64, 'base64');
}

/** A 64-bit integer as a decimal string. */
export function bigintToJson(n: bigint): string {
  return n.toString();
}

export function ctimeToJson(c: Ctime): JsonCtime {
  return {
    secs: c.secs.toString(),
    nanos: c.nanos,
    rfc3339_utc: rfc3339Utc(c.secs),
    rfc3339_local: rfc3339Local(c.secs),
  };
}

/** A packet header: seq, ctime, type, params, env. */
export function headerToJson(h: PacketHeader): JsonHeader {
  const cmd = h.cmd;
  return {
    seq: h.seq.toString(),
    ctime: ctimeToJson(h.ctime),
    type: cmd.kind,
    params: cmd.kind === 'Command' ? cmd.params.map(bytesToJson) : [],
    env:
      cmd.kind === 'Command'
        ? cmd.env.map(([name, value]) => ({ name: bytesToJson(name), value: bytesToJson(value) }))
        : [],
  };
}

/** One `queue-ls --json` line: the header with the job's file name after the seq. */
export function jobEntryToJson(job: JobEntry): { [key: string]: JsonValue } {
  const { seq, ...rest } = headerToJson(job.header);
  const seal = job.header.seal;
  return {
    seq,
    filename: job.filename,
    ...rest,
    sealed: seal !== undefined,
    ...(seal ? { payload_len: seal.length.toString(), payload_crc32: seal.crc32 } : {}),
    ...signatureToJson(job.header, job.signer),
    ...retryKeysToJson(job.header),
  };
}

/**
 * The retry keys (packet/retry-keys.ts) and not_before (packet/not-before.ts), only when the
 * packet has them: `retries`, `not_before` (RFC
 * 3339 UTC), and `failure`, the facts of a failed-jobs queue's packet.
 */
function retryKeysToJson(h: PacketHeader): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  if (h.retries !== undefined) out.retries = Number(h.retries);
  if (h.notBefore !== undefined) out.not_before = new Date(h.notBefore).toISOString();
  const f = h.failure;
  if (f)
    out.failure = {
      queue: f.queue,
      seq: f.seq.toString(),
      attempts: f.attempts,
      outcome: f.outcome,
      why: f.why,
      at: f.at,
      ...(f.tail === undefined ? {} : { tail: f.tail }),
    };
  return out;
}

/**
 * A packet's signature (src/sign/): whether it is signed, the key it claims (`signer_key`,
 * unchecked unless `signer` says who, as a run with allowed signers found), and the signer.
 */
function signatureToJson(h: PacketHeader, signer?: Signer): { [key: string]: JsonValue } {
  if (!h.signature) return { signed: false };
  return {
    signed: true,
    signer_key: signer?.fingerprint ?? claimedSigner(h) ?? null,
    signer: signer?.principal ?? null,
  };
}

/**
 * `queue-info --json` (with `where`) and `stdin-info --json` (without): the header, the job's
 * location, and the FSPL_* variables its command gets, in the order the text output lists them.
 */
export function jobInfoToJson(h: PacketHeader, where?: JobLocation): { [key: string]: JsonValue } {
  const { seq, ...rest } = headerToJson(h);
  const location: { [key: string]: JsonValue } = where
    ? { filename: where.filename, queuedir: where.queuedir, fullpath: `${where.queuedir}/jobs/${where.filename}` }
    : {};
  return {
    seq,
    ...location,
    ...rest,
    ...signatureToJson(h),
    variables: jobVariables(h, where).map(([name, value]) => ({ name: bytesToJson(name), value: bytesToJson(value) })),
  };
}

/** `queue-get-next --json`. */
export function nextseqToJson(next: bigint): { nextseq: string } {
  return { nextseq: next.toString() };
}

export function rangesToJson(ranges: readonly SeqRange[]): Array<{ first: string; last: string }> {
  return ranges.map((r) => ({ first: r.first.toString(), last: r.last.toString() }));
}

function statusJobToJson(j: StatusJob | undefined): JsonValue {
  if (!j) return null;
  return {
    seq: j.seq.toString(),
    filename: j.filename,
    ctime: ctimeToJson(j.ctime),
    age_seconds: j.ageSeconds,
    sealed: j.sealed,
  };
}

/** `queue-status --json`. */
export function statusToJson(s: QueueStatus): { [key: string]: JsonValue } {
  return {
    queuedir: s.dir,
    decoder: s.decoder ?? null,
    checked_at: ctimeToJson(s.checkedAt),
    state: s.state,
    can_progress: s.canProgress,
    problems: s.problems.map((p) => ({ code: p.code, message: p.message })),
    nextseq: {
      state: s.nextseq.state,
      value: s.nextseq.value === undefined ? null : s.nextseq.value.toString(),
      problem: s.nextseq.problem ?? null,
    },
    lock: { path: s.lock.path, state: s.lock.state },
    jobs: s.jobs,
    waiting: { count: s.waiting, seqs: rangesToJson(s.waitingSeqs) },
    runnable: s.runnable,
    not_before: s.notBefore ? { seq: s.notBefore.seq.toString(), at: s.notBefore.at.toISOString() } : null,
    gap: s.gap
      ? { seq: s.gap.seq.toString(), is_next: s.gap.isNext, present_beyond: rangesToJson(s.gap.presentBeyond) }
      : null,
    below_next: { count: s.belowNext, seqs: rangesToJson(s.belowNextSeqs) },
    duplicates: s.duplicates.map((d) => ({ seq: d.seq.toString(), files: d.files })),
    oldest: statusJobToJson(s.oldest),
    newest: statusJobToJson(s.newest),
    undecodable: s.undecodable.map((f) => ({
      filename: f.filename,
      size: f.size ?? null,
      kind: f.kind,
      cause: f.cause,
      error: f.error,
    })),
    too_large: s.tooLarge.map((f) => ({
      filename: f.filename,
      size: f.size ?? null,
      metadata_length: f.metadataLength.toString(),
      limit: f.limit,
      claimed_seq: f.claimedSeq === undefined ? null : f.claimedSeq.toString(),
    })),
    sealed: s.sealed,
    damaged: s.damaged.map((d) => ({
      seq: d.seq.toString(),
      filename: d.filename,
      payload_size: d.payloadSize,
      sealed_size: d.sealedSize.toString(),
    })),
    signed: s.signed,
    unsigned: s.unsigned.map((u) => ({ seq: u.seq.toString(), filename: u.filename, why: u.why })),
    refused: s.refused.map((r) => ({ filename: r.filename, why: r.why })),
    temp_files: s.tempFiles.map((f) => ({
      filename: f.filename,
      kind: f.kind,
      size: f.size ?? null,
      age_seconds: f.ageSeconds ?? null,
    })),
    output_files: s.outputFiles,
    other_files: s.otherFiles.map((f) => ({ filename: f.filename, type: f.type })),
  };
}

/** A whole JSON document, indented by two spaces, with a final newline. */
export function toJsonDocument(value: JsonValue): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** One JSON document per line (JSON Lines). */
export function toJsonLine(value: JsonValue): string {
  return `${JSON.stringify(value)}\n`;
}
