/**
 * `fspl queue-status`: one queue (`-q DIR`), or every queue under a parent (`--queues-in PARENT`,
 * an extension, as queue-process serves them), each diagnosed as `-q` would diagnose it alone.
 * Exit 3 when a queue can not make progress (stuck); the diagnosis itself succeeded.
 */
import type { Logger } from '../../base/log.js';
import { statusToJson, toJsonDocument, toJsonLine } from '../../json.js';
import { Queue } from '../../queue/queue.js';
import { listQueueDirs, noQueueUnder } from '../../queue/queue-dirs.js';
import { type QueueStatus, queueStatus } from '../../status/report.js';
import { allowedSignersArg, flag, maxHeaderSizeArg, str, strings } from '../parse/args.js';
import type { Invocation } from '../parse/grammar.js';
import type { FsplArgs } from '../parse/spec.js';
import { UsageError, writeOut } from '../text/output.js';
import { formatStatusText } from '../text/status-text.js';

export async function queueStatusCommand(inv: Invocation<FsplArgs<'queue-status'>>, log: Logger): Promise<number> {
  const dir = str(inv, 'queuedir');
  const parents = strings(inv, 'queues-in');
  if (dir === undefined && parents.length === 0)
    throw new UsageError(
      'missing -q DIR: the queue directory (or, for every queue under a parent, --queues-in PARENT)',
    );
  if (dir !== undefined && parents.length > 0) throw new UsageError('give -q DIR or --queues-in PARENT, not both');
  const allowedSigners = await allowedSignersArg(inv);
  const open = (d: string) =>
    Queue.open(d, {
      decoder: str(inv, 'decoder'),
      maxHeaderSize: maxHeaderSizeArg(inv),
      logger: log,
    }).withAllowedSigners(allowedSigners);
  const json = flag(inv, 'json');
  if (dir !== undefined) {
    const status = await queueStatus(open(dir));
    writeOut(json ? toJsonDocument(statusToJson(status)) : formatStatusText(status));
    return status.canProgress ? 0 : 3;
  }
  const dirs: string[] = [];
  for (const parent of parents) {
    const none = noQueueUnder(parent);
    if (none !== undefined) log.warn('status', `--queues-in found no queue: ${none}`);
    dirs.push(
      ...listQueueDirs(parent)
        .filter((e) => e.kind === 'queue')
        .map((e) => e.dir),
    );
  }
  let stuck = false;
  for (const d of dirs) {
    const status: QueueStatus = await queueStatus(open(d));
    stuck ||= !status.canProgress;
    // One line per queue (JSON Lines): a script reads them as they come.
    writeOut(json ? toJsonLine(statusToJson(status)) : `${formatStatusText(status)}\n`);
  }
  return stuck ? 3 : 0;
}
