/**
 * A staged token published: renamed into its place's jobs/ (made durable by the caller's fsync of
 * that directory, or here by publishDurably).
 */
import fs from 'node:fs';
import path from 'node:path';
import { NetError } from '../../base/errors.js';
import { fsyncDir } from '../../sys/durable.js';

/**
 * Rename a staged packet into place, not yet durable: the caller fsyncs the directory (once for
 * all it published, see fsyncDirs). 'done' when it had been renamed already (temp gone, final
 * there); 'gone' when neither is there, which only a redone commit meets: its output was renamed,
 * made durable and consumed by a reader since, and the journal's end record for it was lost (a
 * staged file is durable before its commit is recorded, so it can't have vanished unpublished).
 */
export function publish(temp: string, final: string): 'renamed' | 'done' | 'gone' {
  try {
    fs.renameSync(temp, final);
    return 'renamed';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return fs.existsSync(final) ? 'done' : 'gone';
  }
}

/** What a publish's rename, run elsewhere (a batch), came to: as publish says, or its error. */
export function published(final: string, err: NodeJS.ErrnoException | undefined): 'renamed' | 'done' | 'gone' {
  if (!err) return 'renamed';
  if (err.code !== 'ENOENT') throw err;
  return fs.existsSync(final) ? 'done' : 'gone';
}

/** Publish one staged packet and make it durable (its directory fsynced) before returning. */
export function publishDurably(temp: string, final: string): void {
  if (publish(temp, final) === 'gone')
    throw new NetError(`The staged token ${temp} vanished before it was renamed to ${path.basename(final)}`);
  fsyncDir(path.dirname(final)); // the new name is durable: the token is in the place to stay
}
