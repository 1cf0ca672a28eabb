/**
 * Levelled logging to stderr, in the same shape as the reference (`LEVEL target: message`, the
 * level right-aligned in five columns), so that log scrapers keep working.
 */
import fs from 'node:fs';

export const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LEVELS)[number];

const RANK: Record<LogLevel, number> = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 };

export type LogSink = (line: string) => void;

export interface Logger {
  enabled(level: LogLevel): boolean;
  log(level: LogLevel, target: string, message: string | (() => string)): void;
  trace(target: string, message: string | (() => string)): void;
  debug(target: string, message: string | (() => string)): void;
  info(target: string, message: string | (() => string)): void;
  warn(target: string, message: string | (() => string)): void;
  error(target: string, message: string | (() => string)): void;
}

const stderrSink: LogSink = (line) => {
  try {
    fs.writeSync(2, line);
  } catch {
    /* stderr gone: nothing sensible left to do */
  }
};

export function createLogger(level: LogLevel = 'info', sink: LogSink = stderrSink): Logger {
  const min = RANK[level];
  const enabled = (l: LogLevel) => RANK[l] >= min;
  const log = (l: LogLevel, target: string, message: string | (() => string)) => {
    if (!enabled(l)) return;
    const text = typeof message === 'function' ? message() : message;
    sink(`${l.toUpperCase().padStart(5)} fspl::${target}: ${text}\n`);
  };
  return {
    enabled,
    log,
    trace: (t, m) => log('trace', t, m),
    debug: (t, m) => log('debug', t, m),
    info: (t, m) => log('info', t, m),
    warn: (t, m) => log('warn', t, m),
    error: (t, m) => log('error', t, m),
  };
}

/** A logger that drops everything: the library default, so that importing it stays silent. */
export const silentLogger: Logger = createLogger('error', () => {});

/** A level name in any case, or a number from 1 (error) to 5 (trace), as the reference accepts. */
export function parseLogLevel(s: string): LogLevel | undefined {
  if (/^[1-5]$/.test(s)) return LEVELS[5 - Number(s)];
  const l = s.toLowerCase();
  return (LEVELS as readonly string[]).includes(l) ? (l as LogLevel) : undefined;
}
