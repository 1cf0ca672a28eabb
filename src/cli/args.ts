/** Reading a subcommand's parsed arguments: each a value of the right kind, or a usage error. */
import type { Logger } from '../log.js';
import { parseSeq } from '../seqfile.js';
import { UsageError } from './output.js';
import type { Invocation } from './spec.js';

export function str(inv: Invocation, name: string): string | undefined {
  const v = inv.args[name];
  return v === undefined || v === null ? undefined : String(v);
}

export function required(inv: Invocation, name: string): string {
  const v = str(inv, name);
  if (v === undefined) throw new UsageError(`missing required argument <${name.toUpperCase()}>`);
  return v;
}

export function seqArg(inv: Invocation, name: string): bigint {
  const text = required(inv, name);
  const n = parseSeq(text);
  if (n === undefined) throw new UsageError(`invalid value '${text}' for <${name.toUpperCase()}>: expected a whole number from 0 to 18446744073709551615`);
  return n;
}

export function intArg(inv: Invocation, name: string): number | undefined {
  const text = str(inv, name);
  if (text === undefined) return undefined;
  const n = parseSeq(text);
  if (n === undefined) throw new UsageError(`invalid value '${text}' for --${name}: expected a whole number`);
  return Number(n);
}

/**
 * A number of seconds: a whole number as the reference takes it (`+5`, `007`), or with a
 * fraction (`0.5`, `.25`: an extension, the reference takes whole seconds only), at least `min`.
 */
export function secondsArg(inv: Invocation, name: string, min = 0): number | undefined {
  const text = str(inv, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\+?(\d+\.?\d*|\.\d+)$/.test(text) || !(n >= min)) {
    throw new UsageError(`invalid value '${text}' for --${name}: expected a number of seconds${min > 0 ? `, at least ${min}` : ''} (fractions allowed, e.g. 0.5)`);
  }
  return n;
}

export function enumArg<T extends string>(inv: Invocation, name: string, values: readonly T[]): T {
  const text = required(inv, name);
  const v = text.toLowerCase() as T;
  if (!values.includes(v)) throw new UsageError(`invalid value '${text}' for --${name}: use one of ${values.join(', ')}`);
  return v;
}

/** An option that may be given more than once (`-q` of queue-process): its values, in order. */
export function strings(inv: Invocation, name: string): string[] {
  const v = inv.args[name];
  if (v === undefined || v === null) return [];
  return (Array.isArray(v) ? v : [v]).map(String);
}

/** The options stdin-process and queue-process share. */
export function processOptions(inv: Invocation, log: Logger) {
  return {
    command: required(inv, 'command'),
    params: inv.params,
    allowJobParams: Boolean(inv.args['allow-job-params']),
    ignorePayload: Boolean(inv.args['ignore-payload']),
    timeout: secondsArg(inv, 'timeout'),
    stopTimeout: secondsArg(inv, 'stop-timeout'),
    logger: log,
  };
}
