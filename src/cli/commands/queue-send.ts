/**
 * `fspl queue-send` (an extension): checks the options, then calls sendQueue; a status line on a
 * terminal, and a one-line summary at the end (--json: on stdout), each outcome said once. Exit 0
 * when nothing waits for a failure, 1 when packets wait for the host (or sending stopped), 2 for
 * bad usage. With --status it sends nothing and says how the outbox and its sender are.
 */

import type { Logger } from '../../base/log.js';
import { plural } from '../../base/plural.js';
import {
  createLogger,
  type Destination,
  DestinationError,
  parseDestination,
  type QueueSendEvent,
  type QueueSendStatus,
  queueSendStatus,
  sendQueue,
} from '../../index.js';
import { describeQueueSendSummary, duplicatesText, packetsWait } from '../../send/queue-send-words.js';
import { flag, required, secondsArg, str } from '../parse/args.js';
import type { Invocation } from '../parse/grammar.js';
import type { FsplArgs } from '../parse/spec.js';
import { checkLogLevel, UsageError, writeOut } from '../text/output.js';
import { StatusLine } from '../text/status-line.js';
import { stderrIsTerminal } from '../text/stderr-terminal.js';

export async function queueSend(inv: Invocation<FsplArgs<'queue-send'>>, given: Logger): Promise<number> {
  if (flag(inv, 'status')) return showStatus(inv);
  const dest = str(inv, 'to');
  if (dest === undefined)
    throw new UsageError('missing --to DEST: where to send, ssh:HOST:QUEUE or nncp:NODE:HANDLE (or --status)');
  let to: Destination;
  try {
    to = parseDestination(dest);
  } catch (err) {
    if (err instanceof DestinationError) throw new UsageError(err.message, false);
    throw err;
  }
  const watch = flag(inv, 'watch');
  if (str(inv, 'poll-interval') !== undefined && !watch)
    throw new UsageError('--poll-interval only applies with --watch');
  const pollInterval = secondsArg(inv, 'poll-interval', 0.01);
  const ssh = str(inv, 'ssh')?.trim().split(/\s+/);
  if (ssh && ssh[0] === '') throw new UsageError('--ssh: an empty command');
  if (to.kind === 'nncp')
    for (const o of ['ssh', 'remote-fspl'] as const)
      if (str(inv, o) !== undefined)
        throw new UsageError(`--${o} applies to ssh: destinations (--to nncp: hands the packets to nncp-exec)`, false);
  const nncpCfg = str(inv, 'nncp-cfg');
  if (nncpCfg !== undefined && to.kind !== 'nncp')
    throw new UsageError('--nncp-cfg applies to nncp: destinations (it names the NNCP config nncp-exec uses)', false);
  if (nncpCfg === '') throw new UsageError('--nncp-cfg: an empty path', false);
  const line = !flag(inv, 'no-progress') && stderrIsTerminal() ? new StatusLine(process.stderr) : undefined;
  const log = line ? createLogger(checkLogLevel(inv.logLevel), line.sink) : given;
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const summary = await sendQueue({
      outbox: required(inv, 'queuedir'),
      to,
      ssh,
      remoteFspl: str(inv, 'remote-fspl'),
      nncpCfg,
      watch: watch && { pollInterval },
      signal: stop.signal,
      logger: log,
      onEvent: line && ((e) => line.draw(statusText(e))),
    });
    line?.clear();
    if (flag(inv, 'json')) writeOut(`${JSON.stringify({ ...summary, next: summary.next.toString() })}\n`);
    else
      process.stderr.write(
        `fspl queue-send: ${describeQueueSendSummary(summary, { handed: to.kind === 'nncp', watch })}\n`,
      );
    return summary.error !== undefined || summary.stopped !== undefined ? 1 : 0;
  } finally {
    line?.clear();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function statusText(e: QueueSendEvent): string {
  switch (e.type) {
    case 'sent':
      return `queue-send: ${e.sent} sent${duplicatesText(e.duplicates)}, ${packetsWait(e.waiting)}`;
    case 'failing': {
      const retry = e.retryInMs === undefined ? '' : `, retry ${e.attempts + 1} in ${Math.ceil(e.retryInMs / 1000)} s`;
      return `queue-send: ${packetsWait(e.waiting)}; cannot deliver (${e.error})${retry}`;
    }
    case 'reachable':
      return `queue-send: reachable again, ${packetsWait(e.waiting)}`;
    case 'idle':
      return `queue-send: ${packetsWait(e.waiting)}${e.blocked ? `: ${e.blocked}` : ''}`;
  }
}

/** `--status`: the outbox and its sender, as text on stdout (or the JSON document with --json). */
async function showStatus(inv: Invocation<FsplArgs<'queue-send'>>): Promise<number> {
  for (const o of ['to', 'ssh', 'remote-fspl', 'nncp-cfg', 'poll-interval'] as const)
    if (str(inv, o) !== undefined) throw new UsageError(`--status takes no --${o} (it sends nothing)`);
  if (flag(inv, 'watch')) throw new UsageError('--status takes no --watch (it sends nothing)');
  const st = await queueSendStatus(required(inv, 'queuedir'));
  if (flag(inv, 'json')) writeOut(`${JSON.stringify(st, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
  else writeOut(`${statusLines(st).join('\n')}\n`);
  return 0;
}

function when(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** `--status` in words, a line per fact. */
function statusLines(st: QueueSendStatus): string[] {
  const w = st.waiting;
  const range =
    w.count === 0 ? '' : w.lowest === w.highest ? ` (number ${w.lowest})` : ` (numbers ${w.lowest} to ${w.highest})`;
  const lines = [`outbox ${st.outbox}: ${packetsWait(w.count)}${range}, next ${st.next ?? '(nextseq unreadable)'}`];
  if (st.below > 0)
    lines.push(
      `${plural(st.below, 'packet')} numbered below ${st.next} (acknowledged, or put there by hand: never sent)`,
    );
  const s = st.state;
  const to = s?.to ? ` to ${s.to}` : '';
  if (st.sender === 'running')
    lines.push(`sender: running (pid ${s?.pid}), sending${to}; its state written at ${when(s!.updatedAt)}`);
  else if (st.sender === 'locked')
    lines.push('sender: none, but its nextseq.lock is held by another program (queue-process?)');
  else
    lines.push(
      s
        ? `sender: not running; the last (pid ${s.pid}, sending${to}) was last heard of at ${when(s.updatedAt)}`
        : 'sender: not running, and none ever ran here',
    );
  if (!s) return lines;
  if (s.stopped) lines.push(`stopped at ${when(s.stopped.at)}: ${s.stopped.error}`);
  if (s.failing)
    lines.push(`failing since ${when(s.failing.since)} (${plural(s.failing.attempts, 'attempt')}): ${s.failing.error}`);
  if (s.blocked) lines.push(`blocked: ${s.blocked}`);
  if (s.lastSent && s.lastSentAt !== undefined)
    lines.push(
      `last sent: packet ${s.lastSent.seq} (${s.lastSent.id}) at ${when(s.lastSentAt)}; ` +
        `${s.sent} sent by that run${duplicatesText(s.duplicates)}`,
    );
  return lines;
}
