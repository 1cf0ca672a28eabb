/**
 * The ERROR_* variables of an error token: why its firing failed, written once by the run
 * (run/apply-outcome.ts) and read back by `net retry` (where the token goes back to), `net ls`/`show`
 * and the page (what failed). One place for their names (NAMES; what each holds: docs/nets.md),
 * so that a writer and its readers can't drift apart.
 */

/** Why a firing failed, as the run writes it into each of its error tokens. */
export interface FiringError {
  transition: string;
  reason: string;
  /** The command's exit status, if it exited. */
  status?: number;
  stderrTail: string;
  log: string;
}

/** What an error token says of its failure, as read back (a variable absent is undefined, but the reason). */
export interface TokenError {
  transition: string;
  /** '' when the token has none. */
  reason: string;
  status?: string;
  stderr?: string;
  log?: string;
  place?: string;
}

const PREFIX = 'ERROR_';
const NAMES = {
  transition: 'ERROR_TRANSITION',
  reason: 'ERROR_REASON',
  status: 'ERROR_STATUS',
  stderr: 'ERROR_STDERR',
  log: 'ERROR_LOG',
  place: 'ERROR_PLACE',
} as const satisfies Record<keyof TokenError, `${typeof PREFIX}${string}`>;

/** The variables of an error token taken from `place`, in the order they are written. */
export function errorVars(error: FiringError, place: string): Array<[string, string]> {
  return [
    [NAMES.transition, error.transition],
    [NAMES.reason, error.reason],
    [NAMES.status, error.status === undefined ? '' : String(error.status)],
    [NAMES.stderr, error.stderrTail],
    [NAMES.log, error.log],
    [NAMES.place, place],
  ];
}

/** What a token says of its failure, from its variables (`get`: a value by name); undefined if no error token. */
export function readErrorVars(get: (name: string) => string | undefined): TokenError | undefined {
  const transition = get(NAMES.transition);
  if (transition === undefined) return undefined;
  return {
    transition,
    reason: get(NAMES.reason) ?? '',
    status: get(NAMES.status),
    stderr: get(NAMES.stderr),
    log: get(NAMES.log),
    place: get(NAMES.place),
  };
}

/** Whether a variable is one of those (a token put back by `net retry` sheds them all). */
export function isErrorVar(name: string): boolean {
  return name.startsWith(PREFIX);
}
