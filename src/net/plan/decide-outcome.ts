/**
 * The failure policy as a decision: what becomes of a finished firing once its turn to commit has
 * come, from facts the run gathered (whether a token vanished, whether the run is stopping,
 * whether the disk of the staging files was full). It succeeds (its outputs are committed), is
 * retried on the same tokens, puts error tokens into its transition's error place, or stops its
 * transition (the tokens stay). A NOP commits with no outputs; a firing whose token vanished, or
 * that the run abandoned, is dropped; one whose token its signature refused as the firing opened
 * it is dropped too, that token set aside. Pure: the run applies the verdict (run/apply-outcome.ts), with
 * its files, logs, counts and events.
 */

/** The pause before the retry of a firing's attempt n: this times n, in ms. */
export const RETRY_DELAY_MS = 200;

/** A firing that ran (not a NOP), as far as the decision needs it (run/fire-transition.ts's RanOutcome). */
export interface Ran {
  readonly ok: boolean;
  readonly abandoned: boolean;
}

/** What the run knows of a finished firing: `T` its token type, `R` how it ran, `E` a disk's error, `F` a refusal. */
export interface FiringFacts<T, R extends Ran, E, F = T> {
  ended: { readonly nop: true } | R;
  /** The first of its tokens gone from its place meanwhile (removed or replaced from outside). */
  vanished?: T;
  /** A token of a signed place that its signature did not let in when the firing opened it: nothing ran. */
  refused?: F;
  /**
   * Another firing's token was refused so, with a lower number of a sequence place than one of
   * this firing's: committing would move the place past the number that token did not take.
   */
  voided?: boolean;
  /** The run is stopping. */
  stopping: boolean;
  /** A command's staging files' disk was full when it failed: the error found there. */
  stagingFull?: E;
  /** This attempt's number (1 for the first), and the transition's retries. */
  attempt: number;
  retries: number;
  /** The transition's error place, if it has one. */
  errorPlace?: string;
}

/** A failure the run counts and reports (a `fail` event, the monitor's last failure). */
export type Failure<R> =
  /** Failed with attempts left: runs again after `delayMs`. */
  | { kind: 'retry'; ran: R; delayMs: number }
  /** Failed for good: one error token per input token into `place`. */
  | { kind: 'error-tokens'; ran: R; place: string }
  /** Failed for good with no error place: the transition stops, its tokens stay. */
  | { kind: 'stop'; ran: R };

/** The decision: a tagged union, one case for each way the run goes on. */
export type Verdict<T, R, E, F = T> =
  /** A token vanished while it fired: the firing is void, dropped; the token's place is looked at again. */
  | { kind: 'vanished'; token: T }
  /** A token refused as its firing opened it: set aside; the firing is dropped, its other tokens go back. */
  | { kind: 'refused'; refusal: F }
  /** A NOP: committed with no outputs. */
  | { kind: 'nop' }
  /** Abandoned by the run, failed while the run stops (maybe by the stop), or voided: dropped, its tokens stay. */
  | { kind: 'drop' }
  /** Succeeded: its outputs are committed. */
  | { kind: 'commit'; ran: R }
  /**
   * Failed while its staging files' disk was full (`err`): the disk's failure, not the command's; runs again after a
   * backoff, not counted.
   */
  | { kind: 'wait-for-room'; ran: R; err: E }
  | Failure<R>;

/** What becomes of a finished firing. */
export function decide<T, R extends Ran, E, F = T>(f: FiringFacts<T, R, E, F>): Verdict<T, R, E, F> {
  if (f.vanished !== undefined) return { kind: 'vanished', token: f.vanished };
  if (f.refused !== undefined) return { kind: 'refused', refusal: f.refused };
  if (f.voided) return { kind: 'drop' };
  const ran = f.ended;
  if ('nop' in ran) return { kind: 'nop' };
  if (ran.abandoned) return { kind: 'drop' };
  if (ran.ok) return { kind: 'commit', ran };
  if (f.stopping) return { kind: 'drop' };
  if (f.stagingFull !== undefined) return { kind: 'wait-for-room', ran, err: f.stagingFull };
  if (f.attempt <= f.retries) return { kind: 'retry', ran, delayMs: RETRY_DELAY_MS * f.attempt };
  if (f.errorPlace) return { kind: 'error-tokens', ran, place: f.errorPlace };
  return { kind: 'stop', ran };
}
