/**
 * A running command's timeout and stop (exec.ts): which came first, the SIGKILL to its process
 * group, and what the command's exit then means.
 */
import { setLongTimeout } from '../base/timer.js';

/** When a running command is stopped: after `timeout` seconds, or when `stop` aborts. */
export interface StopWhen {
  timeout?: number;
  stop?: AbortSignal;
}

/** What a command's exit means once its timeout and stop are known. */
export interface StopVerdict {
  ok: boolean;
  timedOut: boolean;
  /** Stopped (the `stop` signal) before it could succeed. */
  stopped: boolean;
}

/**
 * The stoppers of the commands running under one AbortSignal, called by one listener of its own:
 * EventTarget's addEventListener and removeEventListener cost a few microseconds each, and a
 * queue-process pass over 1,000 queues paid them for every command (about 1 % of its CPU).
 */
const underSignal = new WeakMap<AbortSignal, Set<() => void>>();

/** Call `fn` when `signal` aborts (it has not yet); returns what takes it back. */
function onAbort(signal: AbortSignal, fn: () => void): () => void {
  let set = underSignal.get(signal);
  if (!set) {
    const fns = new Set<() => void>();
    set = fns;
    underSignal.set(signal, fns);
    signal.addEventListener(
      'abort',
      () => {
        for (const f of [...fns]) f();
        fns.clear();
      },
      { once: true },
    );
  }
  const fns = set;
  fns.add(fn);
  return () => fns.delete(fn);
}

/**
 * A running command's timeout and stop: the first to come kills its process group (SIGKILL) and
 * is remembered. `kill` is called only while the group's leader is not reaped (its pid, and so
 * the group's id, still ours).
 */
export class Stopper {
  private why: 'timeout' | 'stop' | undefined;
  private readonly cancelTimer: (() => void) | undefined;
  private readonly cancelStop: (() => void) | undefined;

  constructor(
    opts: StopWhen,
    private readonly kill: () => void,
  ) {
    this.cancelTimer =
      opts.timeout === undefined ? undefined : setLongTimeout(() => this.fire('timeout'), opts.timeout * 1000);
    if (opts.stop?.aborted) this.fire('stop');
    else if (opts.stop) this.cancelStop = onAbort(opts.stop, () => this.fire('stop'));
  }

  private fire(why: 'timeout' | 'stop'): void {
    if (this.why) return;
    this.why = why;
    this.kill();
  }

  /** The command has exited (with `code`; null: killed by a signal): no kill after this; what came of it. */
  result(code: number | null): StopVerdict {
    this.cancelTimer?.();
    this.cancelStop?.();
    // A command that exits 0 as its timeout comes has still timed out (as it always had); one
    // that succeeded as the stop came has done its job.
    const timedOut = this.why === 'timeout';
    const ok = code === 0 && !timedOut;
    return { ok, timedOut, stopped: this.why === 'stop' && !ok };
  }
}

/** SIGKILL to the process group `pid` leads (the leader itself, should it have left it). */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}
