/**
 * A queue's next job started by the addon at the exit of the one before it: the running job's
 * record (a batch, fs-batch.ts) and the next start, made in C from the exit's callback, before any
 * JavaScript runs (native/fspl_native.c, "chain"). Between two jobs of a queue the main thread
 * otherwise went through about 120 µs of JavaScript more than a C loop making the same system
 * calls (docs/benchmarks-notes.md, "Issue 43, seventh pass").
 *
 * The record is the one JavaScript would have made (Finisher.planJob), in the same order and by
 * the same code (fs_batch.c); the next job starts only once all of it succeeded, as it would
 * have. Only an exit with status 0 fires the chain: any other leaves everything to JavaScript.
 */
import type { EncodedOp } from './native.js';
import type { JobFileAt, NativeExit, SpawnIo } from './native-spawn.js';
import { nativeChain, nativeUnchain } from './native-spawn.js';

/** A child the addon started at the exit of the one before it: its pid, and its exit to come. */
export interface ChainedStart {
  pid: number;
  exited: Promise<NativeExit>;
}

/** What a fired chain did: the record's results (as the addon's fsBatchSync gives them), and the next child. */
export interface ChainOutcome {
  results: Int32Array;
  next: ChainedStart | undefined;
}

/**
 * A running job's link to the job after it. runNative tells it the child's pid and its exit;
 * the link's owner (the queue's run) arms it once it knows the next job, and disarms it when the
 * run must not go on (a stop). One child, one arming at most.
 */
export class ChainLink {
  private pid: number | undefined;
  private group: 'group' | 'session' = 'group';
  private over = false;
  private armed = false;
  /** The next child's exit, resolved by the addon's callback (set when armed). */
  private nextExit: Promise<NativeExit> | undefined;
  /** Set at the exit when the chain fired. */
  fired: ChainOutcome | undefined;

  /** runNative: the child started, in a group of this kind. */
  started(pid: number, group: 'group' | 'session'): void {
    this.pid = pid;
    this.group = group;
  }

  /** runNative: the child exited; what the addon did, if the chain fired. */
  exited(chained: NativeExit['chained']): void {
    this.over = true;
    this.armed = false;
    if (!chained) return;
    const next = chained.pid === undefined ? undefined : { pid: chained.pid, exited: this.nextExit! };
    this.fired = { results: chained.results, next };
  }

  /** Whether the child runs, started by the addon, with nothing armed on it yet. */
  get armable(): boolean {
    return this.pid !== undefined && !this.over && !this.armed;
  }

  /**
   * At the child's exit with status 0: `record`, then, if all of it succeeded and `file` (the next
   * job's) is still there as it was opened, `next` started. False when it can't be armed (armable,
   * nativeChain). The descriptors in `next` must stay open until the exit has been reported
   * (ChainLink.exited).
   */
  arm(record: EncodedOp[], next: SpawnIo, file: JobFileAt): boolean {
    if (!this.armable) return false;
    let settle!: (exit: NativeExit) => void;
    const exited = new Promise<NativeExit>((resolve) => (settle = resolve));
    this.armed = nativeChain(this.pid!, record, next, this.group, file, settle);
    if (this.armed) this.nextExit = exited;
    return this.armed;
  }

  /** Take the arming back: at the exit, nothing is recorded or started but by JavaScript. */
  disarm(): void {
    if (this.armed && !this.over) nativeUnchain(this.pid!);
    this.armed = false;
  }
}
