/**
 * The text output of `fspl queue-status`: aligned `key: value` lines to read at a glance, then a
 * blank line and one line per detail (problems first). The layout is described in the man page.
 */

import { plural } from '../../base/plural.js';
import { notBeforeText } from '../../packet/not-before.js';
import { rfc3339Local } from '../../packet/time.js';
import { formatRanges, type SeqRange } from '../../status/ranges.js';
import type { QueueStatus, StatusJob } from '../../status/report.js';

/** At most this many runs of numbers on one line; the rest are counted. */
const MAX_RANGES = 20;

/** A duration in seconds, roughly: 45s, 12m 5s, 3h 20m, 2d 4h. */
export function formatAge(seconds: number): string {
  if (seconds < 0) return `${formatAge(-seconds)} in the future`;
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Math.floor(seconds % 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s}s`;
  return `${s}s`;
}

function ago(seconds: number): string {
  return seconds < 0 ? formatAge(seconds) : `${formatAge(seconds)} ago`;
}

function ranges(r: readonly SeqRange[]): string {
  return formatRanges(r, MAX_RANGES);
}

function job(j: StatusJob | undefined): string {
  if (!j) return '-';
  return `${j.seq}, created ${rfc3339Local(j.ctime.secs)} (${ago(j.ageSeconds)})`;
}

/** When the job a run stops at is due: RFC 3339 UTC, and how far off (prepare --not-before). */
function dueText(s: QueueStatus): string {
  const at = s.notBefore!.at.getTime();
  const inSecs = Math.ceil((at - (Number(s.checkedAt.secs) * 1000 + s.checkedAt.nanos / 1e6)) / 1000);
  return `${notBeforeText(at)} (in ${formatAge(inSecs)})`;
}

/** The state row: what a queue-process run would do now. */
function stateText(s: QueueStatus): string {
  switch (s.state) {
    case 'ready':
      return (
        `ready: ${plural(s.runnable, 'job')} can run now` +
        (s.notBefore ? `, then job ${s.notBefore.seq} waits until ${dueText(s)}` : '')
      );
    case 'waiting':
      return `waiting until ${dueText(s)}: job ${s.notBefore!.seq} is not due before then`;
    case 'idle':
      return 'idle: no jobs waiting';
    case 'append-only':
      return 'append-only: jobs are stored here, not processed';
    case 'stuck': {
      const more = s.problems.length > 1 ? ` (+${plural(s.problems.length - 1, 'more problem')} below)` : '';
      return `stuck: ${s.problems[0]!.message}${more}`;
    }
  }
}

function nextseqText(n: QueueStatus['nextseq']): string {
  switch (n.state) {
    case 'present':
      return `${n.value}`;
    case 'missing':
      return '1 (no nextseq file: the next run recreates it holding 1)';
    case 'append-only':
      return 'none (append-only queue)';
    case 'invalid':
      return `invalid: ${n.problem} (it holds ${JSON.stringify(n.text)})`;
    case 'unreadable':
      return `unreadable: ${n.problem}`;
  }
}

/** A word as the shell reads it: quoted unless it is plain. */
function shellWord(s: string): string {
  return /^[\w@%+=:,./~-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

/**
 * What to do about a missing next job: wait for it (resend it), or, when it is lost for good,
 * the command that moves past it, to the first job that is there.
 */
function skipHint(dir: string, gap: NonNullable<QueueStatus['gap']>): string[] {
  const to = gap.presentBeyond[0]?.first;
  if (to === undefined) return [];
  const one = to - gap.seq === 1n;
  const missing = one ? `job ${gap.seq}` : `jobs ${gap.seq} to ${to - 1n}`;
  return [
    `  the queue waits for ${missing}: send ` +
      (one
        ? 'it again (the same packet, if the sender kept it);'
        : 'them again (the same packets, if the sender kept them);'),
    `  or, if ${one ? 'it is' : 'they are'} lost for good, skip to job ${to}: ` +
      `fspl queue-set-next -q ${shellWord(dir)} ${to}`,
  ];
}

/** The lines below the table: each problem, and each file that is not a plain job, explained. */
function detailLines(s: QueueStatus): string[] {
  const details: string[] = [];
  for (const p of s.problems) {
    if (p.code === 'next-missing' && s.gap)
      details.push(`${p.message}; present: ${ranges(s.gap.presentBeyond)}`, ...skipHint(s.dir, s.gap));
    else details.push(p.message);
  }
  if (s.gap && !s.gap.isNext)
    details.push(`later gap: job ${s.gap.seq} is missing; present beyond it: ${ranges(s.gap.presentBeyond)}`);
  for (const d of s.duplicates) details.push(`duplicate ${d.seq}: ${d.files.join(', ')}`);
  for (const f of s.undecodable)
    details.push(`unreadable ${f.filename}${f.size === undefined ? '' : ` (${plural(f.size, 'byte')})`}: ${f.cause}`);
  for (const f of s.tooLarge) {
    const claims = f.claimedSeq === undefined ? 'no number can be read from it' : `it claims number ${f.claimedSeq}`;
    details.push(
      `too large ${f.filename}${f.size === undefined ? '' : ` (${plural(f.size, 'byte')})`}: ` +
        `its header metadata is ${f.metadataLength} bytes, over the limit of ${f.limit}, ` +
        `so it is not read (raise --max-header-size to read it); ${claims}`,
    );
  }
  for (const d of s.damaged) {
    details.push(
      `damaged job ${d.seq} ${d.filename}: sealed with a payload of ${plural(Number(d.sealedSize), 'byte')}, ` +
        `the file holds ${d.payloadSize}; queue-process will fail it`,
    );
  }
  for (const u of s.unsigned) details.push(`would refuse ${u.filename}: ${u.why}`);
  for (const r of s.refused) details.push(`refused ${r.filename}${r.why ? `: ${r.why}` : ''}`);
  for (const t of s.tempFiles) {
    const age = t.ageSeconds === undefined ? '' : `, modified ${ago(t.ageSeconds)}`;
    const size = t.size === undefined ? 'gone' : plural(t.size, 'byte');
    const what =
      t.kind === 'upload'
        ? "an upload in progress (queue-send's receiver over ssh, or " +
          'queue-receive), or cut short: the next one finishes or removes it'
        : 'a queue-write in progress, or left by one that was interrupted';
    details.push(`temp file ${t.filename} (${size}${age}): ${what}`);
  }
  for (const o of s.otherFiles)
    details.push(`other ${o.type === 'file' ? 'file' : o.type} ${o.filename}: not a job (jobs are named fspl-*.fspl)`);
  return details;
}

export function formatStatusText(s: QueueStatus): string {
  const rows: Array<[string, string]> = [];
  rows.push(['queue', s.dir]);
  if (s.decoder !== undefined) rows.push(['decoder', s.decoder]);
  rows.push(['state', stateText(s)]);
  rows.push(['nextseq', nextseqText(s.nextseq)]);
  const lock = { free: 'free', held: 'held by another process (queue-process running?)', missing: 'no lock file' }[
    s.lock.state
  ];
  rows.push([
    'lock',
    s.nextseq.state === 'append-only' && s.lock.state === 'missing' ? 'none (append-only queue)' : lock,
  ]);
  rows.push(['waiting', s.waiting === 0 ? '0 jobs' : `${plural(s.waiting, 'job')}: ${ranges(s.waitingSeqs)}`]);
  rows.push(['runnable', `${s.runnable}`]);
  if (s.nextseq.value !== undefined) {
    rows.push([
      'below next',
      s.belowNext === 0
        ? '0 jobs'
        : `${plural(s.belowNext, 'job')}: ${ranges(s.belowNextSeqs)} (already processed or skipped)`,
    ]);
  }
  rows.push(['oldest', job(s.oldest)]);
  rows.push(['newest', job(s.newest)]);
  rows.push(['duplicates', `${s.duplicates.length}`]);
  rows.push(['unreadable', `${s.undecodable.length}`]);
  if (s.tooLarge.length > 0)
    rows.push(['too large', `${s.tooLarge.length} (headers over ${s.tooLarge[0]!.limit} bytes, not read)`]);
  if (s.sealed > 0 || s.damaged.length > 0) rows.push(['sealed', `${s.sealed} (${s.damaged.length} damaged)`]);
  if (s.signed > 0 || s.unsigned.length > 0)
    rows.push(['signed', `${s.signed}${s.unsigned.length > 0 ? ` (${s.unsigned.length} would be refused)` : ''}`]);
  if (s.refused.length > 0) rows.push(['refused', `${s.refused.length} (in refused/, never run)`]);
  rows.push(['temp files', `${s.tempFiles.length}`]);
  rows.push(['output files', `${s.outputFiles.length}`]);
  rows.push(['other files', `${s.otherFiles.length}`]);
  const width = Math.max(...rows.map(([k]) => k.length)) + 2;
  const details = detailLines(s);
  return (
    rows.map(([k, v]) => `${`${k}:`.padEnd(width)}${v}\n`).join('') +
    (details.length > 0 ? `\n${details.join('\n')}\n` : '')
  );
}
