/** Writing to stdout/stderr and turning errors into exit statuses. */
import { describeSystemError } from '../../base/errors.js';
import { type LogLevel, parseLogLevel } from '../../base/log.js';
import { writeAllSync } from '../../sys/io.js';

/**
 * A usage error: exit status 2. `more` is the help its message points to (`--help`, or
 * `fspl net --help`), or false when the message says all (a bad value given to `fspl net`).
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly more: string | false = '--help',
  ) {
    super(message);
  }
}

/** What a usage error prints on stderr. */
export function usageText(err: UsageError): string {
  return `error: ${err.message}\n${err.more === false ? '' : `\nFor more information try ${err.more}\n`}`;
}

/** The log level named on the command line, or a usage error. */
export function checkLogLevel(text: string): LogLevel {
  const level = parseLogLevel(text);
  if (!level) throw new UsageError(`invalid log level '${text}': use trace, debug, info, warn, error, or 1 to 5`);
  return level;
}

/** Write to stdout synchronously (so nothing is lost at exit, and EPIPE is ours to handle). */
export function writeOut(data: string | Uint8Array): void {
  writeAllSync(1, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
}

/** Print one `Error: ...` line on stderr and return the exit status for the error. */
export function reportError(err: unknown): number {
  if (err instanceof UsageError) {
    process.stderr.write(usageText(err));
    return 2;
  }
  const message = describeSystemError(err).split('\n')[0];
  try {
    writeAllSync(2, Buffer.from(`Error: ${message}\n`, 'utf8'));
  } catch {
    /* stderr gone */
  }
  return 1;
}
