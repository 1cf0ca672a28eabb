/**
 * Compiled with `tsc --noEmit` by args-types.test.ts: the CLI's parsed arguments are typed from
 * the grammar (spec.ts, net-spec.ts), so a handler that misspells an option, or reads one its
 * command does not have, or of another kind, does not compile. Each `@ts-expect-error` must meet
 * an error.
 */
import { flag, required, str, strings } from '../../src/cli/parse/args.js';
import type { Invocation } from '../../src/cli/parse/grammar.js';
import type { NetArgs } from '../../src/cli/parse/net-spec.js';
import type { FsplArgs } from '../../src/cli/parse/spec.js';

declare const info: Invocation<FsplArgs<'queue-info'>>;
declare const process: Invocation<FsplArgs<'queue-process'>>;
declare const put: NetArgs<'put'>;
declare const retry: NetArgs<'retry'>;

export const ok: unknown[] = [
  required(info, 'queuedir'),
  str(info, 'decoder'),
  flag(info, 'json'),
  strings(process, 'queuedir'),
  flag(process, 'never-delete'),
  str(process, 'command'),
  put.key satisfies string | undefined,
  put.wait satisfies boolean | undefined,
  retry.key satisfies readonly string[] | undefined,
  retry['error-place'] satisfies string | undefined,
];

export const refused: unknown[] = [
  // @ts-expect-error a misspelt option
  str(info, 'queudir'),
  // @ts-expect-error --json is a flag, not a string
  str(info, 'json'),
  // @ts-expect-error queue-info has no --watch
  flag(info, 'watch'),
  // @ts-expect-error queue-process's -q may repeat: its values are a list
  str(process, 'queuedir'),
  // @ts-expect-error no camelCase twin: one spelling, the grammar's
  put.noWait,
  // @ts-expect-error net put has no --all
  put.all,
];
