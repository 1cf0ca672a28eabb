/**
 * The one reader of the grammar (spec.ts, net-spec.ts): a subcommand's arguments, read by its
 * spec into the typed arguments its handler takes, or the first usage error, said as the
 * reference says it: an unknown option (with "did you mean"), an option given twice, a flag given
 * a value, a missing value, option or positional (named by what it is), an argument too many.
 * Values are not checked here: the handlers do that. Help is text/help.ts's.
 */
import { closest } from '../../base/suggest.js';
import { UsageError } from '../text/output.js';
import type { Globals } from './globals.js';
import type { ArgValue, CommandSpec, OptionSpec, ParsedArgs } from './grammar.js';

/** How a grammar reads its command lines. */
export interface Reading {
  /** How messages name a subcommand of it: `queue-ls`, `net run`. */
  prefix: string;
  /** Where its usage errors point: `--help`, `fspl net --help`. */
  more: string;
  /** Options that every subcommand of it also takes (`fspl net`'s --log-level). */
  shared?: readonly OptionSpec[];
  /** The options that ask for a subcommand's help. */
  help: readonly string[];
  /** fspl's: -l, -V and --implementation go before the subcommand (said when given after it). */
  globalsBefore?: boolean;
  /** `--no-FLAG` turns a flag off (`fspl net run --no-progress`; fspl's own `--no-progress` is a flag of its own). */
  negation?: boolean;
}

/** `ID`, `COMMAND`, `ERROR_PLACE`: a positional as usage lines write it. */
function positionalName(name: string): string {
  return name.toUpperCase().replaceAll('-', '_');
}

/** `-q DIR`, `--timeout SECONDS`, `--json`: an option as a user would type it. */
function optionText(o: OptionSpec): string {
  const flag = o.short ? `-${o.short}` : `--${o.long}`;
  return o.kind === 'boolean' ? flag : `${flag} ${o.value ?? 'VALUE'}`;
}

function quoted(s: string): string {
  return `'${s}'`;
}

/** `; did you mean '--queuedir'?`: a word one or two typos away, or the one word it begins. */
function suggestion(word: string, candidates: readonly string[]): string {
  const starting = word.length >= 3 ? candidates.filter((c) => c.startsWith(word)) : [];
  const c = closest(word, candidates) ?? (starting.length === 1 ? starting[0] : undefined);
  return c === undefined ? '' : `; did you mean ${quoted(c)}?`;
}

/** An unknown subcommand, with the closest known one. */
export function unknownSubcommand(name: string, names: readonly string[], noun: string, more: string): UsageError {
  return new UsageError(`unknown ${noun} ${quoted(name)}${suggestion(name, names)}`, more);
}

/** fspl's options before its subcommand, for "did you mean". */
const GLOBAL_FLAGS = ['--log-level', '--version', '--help', '--implementation'];

/** An option before fspl's subcommand that is none of its global options, or -l without its value. */
export function checkGlobals(g: Globals): UsageError | undefined {
  if (!g.other) return undefined;
  if (g.unknown === undefined) return new UsageError('the option -l needs a value: -l LEVEL');
  const name = g.unknown.split('=')[0]!;
  const near = name.startsWith('--') ? suggestion(name, GLOBAL_FLAGS) : '';
  const hint = near || ' (before the subcommand, fspl takes -l LEVEL, -V, -h and --implementation)';
  return new UsageError(`unknown option ${quoted(g.unknown)}${hint}`);
}

/** The option an argument names, if it names one of these. */
function optionOf(a: string, options: readonly OptionSpec[], negation: boolean): OptionSpec | undefined {
  if (a.startsWith('--')) {
    const name = a.slice(2).split('=')[0]!;
    const flag =
      negation && name.startsWith('no-')
        ? options.find((o) => o.kind === 'boolean' && o.long === name.slice(3))
        : undefined;
    return flag ?? options.find((o) => o.long === name);
  }
  return options.find((o) => o.short !== undefined && o.short === a[1]);
}

/** Whether an argument is an option (not a value, a negative number or stdin's `-`). */
export function isOption(a: string): boolean {
  return a.startsWith('-') && a !== '-' && !/^-\d/.test(a);
}

/** An unknown option of a subcommand: a near miss of one of its own, or a global given after it. */
function unknownOption(a: string, spec: CommandSpec, how: Reading): UsageError {
  const name = a.startsWith('--') ? a.split('=')[0]! : a;
  const where = `${quoted(a)} for ${how.prefix}${spec.name}`;
  if (how.globalsBefore && /^(-l|--log-level)/.test(name)) {
    return new UsageError(
      `unknown option ${where}: the log level goes before the subcommand (fspl -l LEVEL ${spec.name} ...)`,
      how.more,
    );
  }
  if (how.globalsBefore && /^(-V|--version|--implementation)$/.test(name)) {
    return new UsageError(
      `unknown option ${where}: ${name} goes before the subcommand, alone (fspl ${name})`,
      how.more,
    );
  }
  const longs = [...spec.options, ...(how.shared ?? [])].map((o) => `--${o.long}`);
  return new UsageError(`unknown option ${where}${name.startsWith('--') ? suggestion(name, longs) : ''}`, how.more);
}

/** A subcommand's arguments as read: its handler's, or its help asked for. */
export type ReadArguments = { kind: 'args'; args: ParsedArgs; params: string[]; shared: ParsedArgs } | { kind: 'help' };

/**
 * Read a subcommand's arguments (after its name) by its spec. A string option takes the next
 * argument as its value, whatever it is (`-q --json` is the queue `--json`), as the reference's
 * do; a flag takes none. Defaults fill what was not given. `-h`/`--help` (how.help) asks for the
 * subcommand's help, unless a usage error came before it.
 */
export function readArguments(spec: CommandSpec, args: readonly string[], how: Reading): ReadArguments | UsageError {
  const options = [...spec.options, ...(how.shared ?? [])];
  const given = new Map<OptionSpec, ArgValue>();
  const positionals: string[] = [];
  let params: string[] = [];
  let afterDashDash = false;
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!;
    if (a === '--') {
      afterDashDash = true;
      // Without PARAMS, what follows `--` is still positionals (`prepare-set-next -s F -- 5`).
      if (spec.params) params = args.slice(k + 1);
      else positionals.push(...args.slice(k + 1));
      break;
    }
    if (!isOption(a)) {
      positionals.push(a);
      continue;
    }
    if (how.help.includes(a)) return { kind: 'help' };
    const o = optionOf(a, options, how.negation ?? false);
    if (!o) return unknownOption(a, spec, how);
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const inline = eq >= 0 ? a.slice(eq + 1) : !a.startsWith('--') && a.length > 2 ? a.slice(2) : undefined;
    if (o.kind === 'boolean' && inline !== undefined)
      return new UsageError(`the option '--${o.long}' takes no value`, how.more);
    if (given.has(o) && !o.array) return new UsageError(`the option '--${o.long}' was given more than once`, how.more);
    if (o.kind === 'boolean') {
      given.set(o, !a.startsWith('--no-') || a.slice(2) === o.long);
      continue;
    }
    const value = inline ?? args[++k];
    if (value === undefined) return new UsageError(`the option ${quoted(a)} needs a value: ${optionText(o)}`, how.more);
    const before = given.get(o);
    // a repeated option keeps every value
    given.set(o, !o.array ? value : Array.isArray(before) ? [...before, value] : [value]);
  }
  return (
    missingOption(options, given, how) ??
    positionalProblem(spec, positionals, afterDashDash, how) ?? {
      kind: 'args',
      args: argsFrom(spec, given, positionals),
      params,
      shared: Object.fromEntries((how.shared ?? []).map((o) => [o.long, given.get(o) ?? o.default])),
    }
  );
}

function missingOption(
  options: readonly OptionSpec[],
  given: ReadonlyMap<OptionSpec, ArgValue>,
  how: Reading,
): UsageError | undefined {
  const missing = options.find((o) => o.required && !given.has(o));
  return (
    missing && new UsageError(`missing ${optionText(missing)}${missing.what ? `: ${missing.what}` : ''}`, how.more)
  );
}

/** A positional missing, or one too many. */
function positionalProblem(
  spec: CommandSpec,
  positionals: readonly string[],
  afterDashDash: boolean,
  how: Reading,
): UsageError | undefined {
  const wanted = spec.positionals.length;
  if (positionals.length < wanted) {
    const name = spec.positionals[positionals.length]!;
    const help = spec.positionalHelp?.[name];
    return new UsageError(
      `missing ${positionalName(name)}${help ? `: ${help.charAt(0).toLowerCase()}${help.slice(1)}` : ''}`,
      how.more,
    );
  }
  const extra = positionals[wanted + (spec.optionalPositionals?.length ?? 0)];
  if (extra === undefined) return undefined;
  const hint = spec.params && !afterDashDash ? ' (PARAMS go after --)' : '';
  return new UsageError(`unexpected argument ${quoted(extra)}${hint}`, how.more);
}

/** The arguments by the grammar's names (not the shared options'), defaults filled in. */
function argsFrom(
  spec: CommandSpec,
  given: ReadonlyMap<OptionSpec, ArgValue>,
  positionals: readonly string[],
): ParsedArgs {
  const args: { [name: string]: ArgValue } = {};
  for (const o of spec.options) {
    const v = given.get(o) ?? o.default;
    if (v !== undefined) args[o.long] = v;
  }
  [...spec.positionals, ...(spec.optionalPositionals ?? [])].forEach((name, k) => {
    if (positionals[k] !== undefined) args[name] = positionals[k]!;
  });
  return args;
}
