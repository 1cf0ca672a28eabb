/**
 * Waiting for new jobs: file system events on jobs/ (inotify through fs.watch), or polling for
 * file systems where events don't arrive (NFS, SMB, many FUSE mounts). The watcher only says
 * "look again"; the queue's rescan decides what is new.
 */
import fs from 'node:fs';
import type { Logger } from '../base/log.js';
import { isJobFilename } from './jobs.js';

export interface WatchOptions {
  /**
   * Poll every this many seconds instead of using file system events. Without it, events are
   * used, and polling at 1 s takes over if the directory can't be watched.
   */
  pollInterval?: number;
  /** With events, look again this often anyway, in case an event was lost (default 30 s). */
  safetyInterval?: number;
  logger?: Logger;
  /** Events for names this returns false for are ignored (a writer's own renames, say). */
  filter?: (name: string) => boolean;
}

const FALLBACK_POLL_SECONDS = 1;

export class JobsWatcher {
  private dirty = false;
  private wake: (() => void) | undefined;
  private watcher: fs.FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly log: Logger | undefined;
  /** 'events' or 'polling': how new jobs are noticed (after any fallback). */
  mode: 'events' | 'polling';

  /** Start watching dir. Start before the first scan, so that nothing arriving in between is missed. */
  constructor(dir: string, options: WatchOptions = {}) {
    this.log = options.logger;
    if (options.pollInterval !== undefined) {
      this.mode = 'polling';
      this.poll(options.pollInterval);
      return;
    }
    this.mode = 'events';
    try {
      this.watcher = fs.watch(dir, { persistent: true }, (_event, name) => {
        // Our own temporary files and deletions don't matter; a new fspl-*.fspl does.
        if (name === null || (isJobFilename(String(name)) && (options.filter?.(String(name)) ?? true))) this.poke();
      });
      this.watcher.on('error', (err) => this.fallBack(err));
      this.poll(options.safetyInterval ?? 30);
    } catch (err) {
      this.fallBack(err);
    }
  }

  private fallBack(err: unknown): void {
    this.log?.warn(
      'watch',
      `Cannot watch for new jobs (${(err as Error).message}); polling every ${FALLBACK_POLL_SECONDS} s instead`,
    );
    this.watcher?.close();
    this.watcher = undefined;
    this.mode = 'polling';
    this.poll(FALLBACK_POLL_SECONDS);
    this.poke();
  }

  private poll(seconds: number): void {
    if (!(seconds > 0))
      throw new RangeError(`JobsWatcher: invalid poll interval ${seconds}: give a number of seconds above 0`);
    if (this.timer) clearInterval(this.timer);
    // setInterval holds at most 2^31-1 ms (24.8 days); nobody polls less often than that.
    this.timer = setInterval(() => this.poke(), Math.min(Math.max(1, seconds * 1000), 0x7fff_ffff));
  }

  private poke(): void {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Wait until something may have changed since the last call: true to look again, false when the signal aborts. */
  async wait(signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return false;
    if (!this.dirty) {
      await new Promise<void>((resolve) => {
        const done = () => {
          signal?.removeEventListener('abort', done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal?.addEventListener('abort', done, { once: true });
      });
    }
    this.dirty = false;
    return !signal?.aborted;
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.wake?.();
  }
}
