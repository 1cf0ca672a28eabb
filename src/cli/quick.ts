/**
 * The one command bin/fspl answers before the CLI loads: `queue-process -q DIR COMMAND [ARGS]`,
 * as cron runs it, over a queue with plainly nothing to do (src/process/empty-queue.ts). Bundled
 * on its own (dist/bundle/quick.cjs, scripts/bundle.mjs), so that such a run reads and compiles
 * none of the CLI. Only that exact shape is taken: any option, or anything else yargs could read
 * as one, is left to the CLI, which parses it as it always does.
 */
import { settleEmptyQueue } from '../process/empty-queue.js';

/** Whether `argv` (the arguments after `fspl`) is a queue-process run that is now done. Throws nothing. */
export function quickRun(argv: readonly string[]): boolean {
  const dir = plainQueueProcessDir(argv);
  return dir !== undefined && settleEmptyQueue(dir);
}

/**
 * DIR when `argv` is `queue-process -q DIR COMMAND [ARGS]` with no option: COMMAND and every
 * argument before a `--` not starting with `-` (yargs reads options after the command too).
 */
export function plainQueueProcessDir(argv: readonly string[]): string | undefined {
  const [sub, flag, dir, ...rest] = argv;
  if (sub !== 'queue-process' || (flag !== '-q' && flag !== '--queuedir')) return undefined;
  if (!dir || dir.startsWith('-') || rest.length === 0 || rest[0]!.startsWith('-')) return undefined;
  const end = rest.indexOf('--');
  return (end < 0 ? rest : rest.slice(0, end)).some((a) => a.startsWith('-')) ? undefined : dir;
}
