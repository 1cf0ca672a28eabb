/**
 * `fspl queue-send` (an extension): checks the options, then calls sendQueue. Prints a status line
 * on a terminal while it runs, and at the end a one-line summary on stderr (or, with --json, the
 * summary on stdout). Exit 0 when nothing waits because of a failure, 1 when packets wait for the
 * host (or sending stopped), 2 for bad usage (a bad --to).
 */

import type { Logger } from '../base/log.js';
import { createLogger, type Destination, DestinationError, parseDestination, type QueueSendEvent, type QueueSendSummary, sendQueue } from '../index.js';
import { flag, required, secondsArg, str } from './args.js';
import type { Invocation } from './grammar.js';
import { checkLogLevel, UsageError, writeOut } from './output.js';
import { stderrIsTerminal } from './progress.js';
import type { FsplArgs } from './spec.js';
import { StatusLine } from './status-line.js';

export async function queueSend(inv: Invocation<FsplArgs<'queue-send'>>, given: Logger): Promise<number> {
  let to: Destination;
  try {
    to = parseDestination(required(inv, 'to'));
  } catch (err) {
    if (err instanceof DestinationError) throw new UsageError(err.message, false);
    throw err;
  }
  const watch = flag(inv, 'watch');
  if (str(inv, 'poll-interval') !== undefined && !watch) throw new UsageError('--poll-interval only applies with --watch');
  const pollInterval = secondsArg(inv, 'poll-interval', 0.01);
  const ssh = str(inv, 'ssh')?.trim().split(/\s+/);
  if (ssh && ssh[0] === '') throw new UsageError('--ssh: an empty command');
  if (to.kind === 'nncp')
    for (const o of ['ssh', 'remote-fspl'] as const)
      if (str(inv, o) !== undefined) throw new UsageError(`--${o} applies to ssh: destinations (--to nncp: hands the packets to nncp-exec)`, false);
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
      watch: watch && { pollInterval },
      signal: stop.signal,
      logger: log,
      onEvent: line && ((e) => line.draw(statusText(e))),
    });
    line?.clear();
    if (flag(inv, 'json')) writeOut(`${JSON.stringify({ ...summary, next: summary.next.toString() })}\n`);
    else process.stderr.write(`${summaryLine(summary)}\n`);
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
      return `queue-send: ${e.sent} sent${e.duplicates ? ` (${e.duplicates} already there)` : ''}, ${e.waiting} wait`;
    case 'failing':
      return `queue-send: ${e.waiting} wait; cannot deliver (${e.error})${e.retryInMs === undefined ? '' : `, retry ${e.attempts + 1} in ${Math.ceil(e.retryInMs / 1000)} s`}`;
    case 'reachable':
      return `queue-send: reachable again, ${e.waiting} wait`;
    case 'idle':
      return `queue-send: ${e.waiting} wait${e.blocked ? `: ${e.blocked}` : ''}`;
  }
}

/**
 * `fspl queue-send: sent 500 packet(s) to ssh:b:/q over 1 connection(s); 0 wait` (and why, when some
 * do); through NNCP, `handed 500 packet(s) for nncp:b:fspl to NNCP in 1 batch(es)`.
 */
function summaryLine(s: QueueSendSummary): string {
  const dup = s.duplicates > 0 ? ` (${s.duplicates} already there)` : '';
  const why = s.stopped ? `; stopped: ${s.stopped}` : s.error ? `; cannot deliver: ${s.error}` : s.blocked ? `; ${s.blocked}` : '';
  const how = s.to.startsWith('nncp:')
    ? `handed ${s.sent} packet(s) for ${s.to} to NNCP in ${s.connections} batch(es)`
    : `sent ${s.sent} packet(s)${dup} to ${s.to} over ${s.connections} connection(s)`;
  return `fspl queue-send: ${how}; ${s.waiting} wait, next ${s.next}${why}`;
}
