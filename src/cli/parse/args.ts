/**
 * Reading a subcommand's parsed arguments: each a value of the right kind, or a usage error.
 * Each reader takes the name of an argument its command has, of the kind it reads (spec.ts's
 * ArgsOf): a misspelt name, or one of another command, does not compile.
 */

import type { Logger } from '../../base/log.js';
import { MAX_METADATA_LENGTH } from '../../packet/types.js';
import type { AllowedSigners } from '../../sign/allowed-signers.js';
import type { SignWith } from '../../sign/signer.js';
import { parseSeq } from '../../sys/seq-text.js';
import { UsageError } from '../text/output.js';
import type { Invocation } from './grammar.js';

/** Arguments that have these string options or positionals. */
export type StringArgs<N extends string> = { readonly [K in N]: string | undefined };
/** Arguments that have these flags. */
export type FlagArgs<N extends string> = { readonly [K in N]: boolean | undefined };
/** Arguments that have these repeatable options. */
export type ListArgs<N extends string> = { readonly [K in N]: readonly string[] | undefined };

export function str<N extends string>(inv: Invocation<StringArgs<NoInfer<N>>>, name: N): string | undefined {
  return inv.args[name];
}

export function required<N extends string>(inv: Invocation<StringArgs<NoInfer<N>>>, name: N): string {
  const v = inv.args[name];
  if (v === undefined) throw new UsageError(`missing required argument <${name.toUpperCase()}>`);
  return v;
}

export function seqArg<N extends string>(inv: Invocation<StringArgs<NoInfer<N>>>, name: N): bigint {
  const text = required(inv, name);
  const n = parseSeq(text);
  if (n === undefined)
    throw new UsageError(
      `invalid value '${text}' for <${name.toUpperCase()}>: expected a whole number from 0 to 18446744073709551615`,
    );
  return n;
}

/** A repeated option's sequence numbers (`-j 3 -j 5`), each checked. */
export function seqsArg<N extends string>(inv: Invocation<ListArgs<NoInfer<N>>>, name: N): bigint[] {
  return strings(inv, name).map((text) => {
    const n = parseSeq(text);
    if (n === undefined)
      throw new UsageError(
        `invalid value '${text}' for --${name}: expected a whole number from 0 to 18446744073709551615`,
      );
    return n;
  });
}

export function intArg<N extends string>(inv: Invocation<StringArgs<NoInfer<N>>>, name: N): number | undefined {
  const text = inv.args[name];
  if (text === undefined) return undefined;
  const n = parseSeq(text);
  if (n === undefined) throw new UsageError(`invalid value '${text}' for --${name}: expected a whole number`);
  return Number(n);
}

/**
 * A number of seconds: a whole number as the reference takes it (`+5`, `007`), or with a
 * fraction (`0.5`, `.25`: an extension, the reference takes whole seconds only), at least `min`.
 */
export function secondsArg<N extends string>(
  inv: Invocation<StringArgs<NoInfer<N>>>,
  name: N,
  min = 0,
): number | undefined {
  const text = inv.args[name];
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\+?(\d+\.?\d*|\.\d+)$/.test(text) || !(n >= min)) {
    throw new UsageError(
      `invalid value '${text}' for --${name}: expected a number of seconds${min > 0 ? `, at least ${min}` : ''} ` +
        `(fractions allowed, e.g. 0.5)`,
    );
  }
  return n;
}

export function enumArg<T extends string, N extends string>(
  inv: Invocation<StringArgs<NoInfer<N>>>,
  name: N,
  values: readonly T[],
): T {
  const text = required(inv, name);
  const v = values.find((value) => value === text.toLowerCase());
  if (v === undefined) throw new UsageError(`invalid value '${text}' for --${name}: use one of ${values.join(', ')}`);
  return v;
}

/**
 * --max-header-size BYTES (K, M or G: 1024, 1024^2, 1024^3 bytes), or FSPL_MAX_HEADER_SIZE when it
 * is not given; undefined when neither is (the library's default then). At most 200 MiB.
 */
export function maxHeaderSizeArg(
  inv: Invocation<StringArgs<'max-header-size'>>,
  env: NodeJS.ProcessEnv = process.env,
): number | undefined {
  const given = inv.args['max-header-size'];
  const text = given ?? env.FSPL_MAX_HEADER_SIZE;
  if (text === undefined || (given === undefined && text === '')) return undefined;
  const m = /^\+?(\d{1,12})([kmg]?)$/i.exec(text.trim());
  const n = m ? Number(m[1]) * 1024 ** ' kmg'.indexOf((m[2] || ' ').toLowerCase()) : Number.NaN;
  if (!(n >= 1 && n <= MAX_METADATA_LENGTH)) {
    const where = given === undefined ? 'FSPL_MAX_HEADER_SIZE' : '--max-header-size';
    throw new UsageError(
      `invalid value '${text}' for ${where}: expected a number of bytes from ` +
        `1 to ${MAX_METADATA_LENGTH} (200M), K or M suffix allowed`,
    );
  }
  return n;
}

/**
 * --verify-decoder, or FSPL_VERIFY_DECODER=1 (or true, yes) in the environment. The flag without
 * -d is a usage error; the variable without -d is ignored (a cron line's environment may serve
 * plain queues too).
 */
export function verifyDecoderArg(
  inv: Invocation<StringArgs<'decoder'> & FlagArgs<'verify-decoder'>>,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  const given = inv.args['verify-decoder'] === true;
  if (inv.args.decoder === undefined) {
    if (given) throw new UsageError('--verify-decoder only applies with -d DECODER');
    return false;
  }
  return given || /^(1|true|yes)$/i.test(env.FSPL_VERIFY_DECODER ?? '');
}

/** A flag: given or not. */
export function flag<N extends string>(inv: Invocation<FlagArgs<NoInfer<N>>>, name: N): boolean {
  return inv.args[name] === true;
}

/** An option that may be given more than once (`-q` of queue-process): its values, in order. */
export function strings<N extends string>(inv: Invocation<ListArgs<NoInfer<N>>>, name: N): string[] {
  return [...(inv.args[name] ?? [])];
}

/** The arguments stdin-process and queue-process share. */
type ProcessArgs = StringArgs<'command' | 'timeout' | 'stop-timeout'> & FlagArgs<'allow-job-params' | 'ignore-payload'>;

/** The options stdin-process and queue-process share. */
export function processOptions(inv: Invocation<ProcessArgs>, log: Logger) {
  return {
    command: required(inv, 'command'),
    params: inv.params,
    allowJobParams: flag(inv, 'allow-job-params'),
    ignorePayload: flag(inv, 'ignore-payload'),
    timeout: secondsArg(inv, 'timeout'),
    stopTimeout: secondsArg(inv, 'stop-timeout'),
    logger: log,
  };
}

/**
 * --allowed-signers FILE, or FSPL_ALLOWED_SIGNERS when it is not given (cron lines): the allowed
 * signers read from it; undefined when neither is given (an empty variable counts as not given).
 */
export async function allowedSignersArg(
  inv: Invocation<StringArgs<'allowed-signers'>>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<AllowedSigners | undefined> {
  const file = inv.args['allowed-signers'] ?? (env.FSPL_ALLOWED_SIGNERS || undefined);
  if (file === undefined) return undefined;
  const { AllowedSigners } = await import('../../sign/allowed-signers.js');
  return AllowedSigners.load(file);
}

/** --sign KEY or --sign-command CMD (not both): how prepare signs, if it does. */
export function signArg(inv: Invocation<StringArgs<'sign' | 'sign-command'>>): SignWith | undefined {
  const key = inv.args.sign;
  const command = inv.args['sign-command'];
  if (key !== undefined && command !== undefined)
    throw new UsageError('--sign and --sign-command are exclusive: give one way to sign');
  if (key !== undefined) return { key };
  if (command !== undefined) return { command };
  return undefined;
}
