/**
 * The fast path of argument parsing. Loading and running yargs costs more than the rest of a
 * typical fspl run put together (it is most of our start-up time), so ordinary, well-formed
 * command lines are parsed here straight from the grammar in spec.ts. Anything this parser is
 * not sure of (help, version, unknown or repeated options, missing arguments, anything odd)
 * returns undefined, and the caller hands the command line to yargs, which then gives the help
 * text or the usage error. Values are not validated here: the handlers do that.
 */

import { scanGlobals } from './globals.js';
import type { ArgValue, CommandSpec, Invocation, OptionSpec } from './grammar.js';
import { COMMAND_BY_NAME, DEFAULT_LOG_LEVEL } from './spec.js';

export function fastParse(argv: string[], commands: ReadonlyMap<string, CommandSpec> = COMMAND_BY_NAME): Invocation | undefined {
  const g = scanGlobals(argv);
  if (g.version || g.help || g.implementation || g.other || g.logLevels.length > 1) return undefined;
  const logLevel = g.logLevels[0];
  let i = g.end;
  const spec = commands.get(argv[i++] ?? '');
  if (!spec) return undefined;
  const byLong = new Map<string, OptionSpec>();
  const byShort = new Map<string, OptionSpec>();
  for (const o of spec.options) {
    byLong.set(o.long, o);
    if (o.short) byShort.set(o.short, o);
  }
  // By the grammar's names only, each of its kind, as spec.ts's argsOf makes them for yargs.
  const args: { [name: string]: ArgValue } = {};
  const values: { [name: string]: string[] } = {};
  const positionals: string[] = [];
  let params: string[] = [];
  for (; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      // After `--`, a subcommand without PARAMS still takes its positionals (set-next -- 5).
      if (spec.params) params = argv.slice(i + 1);
      else positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith('-') || a === '-') {
      positionals.push(a);
      continue;
    }
    let opt: OptionSpec | undefined;
    let inline: string | undefined;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      opt = byLong.get(eq < 0 ? a.slice(2) : a.slice(2, eq));
      if (eq >= 0) inline = a.slice(eq + 1);
    } else {
      opt = byShort.get(a[1]!);
      if (a.length > 2) inline = a.slice(2);
    }
    if (!opt || (opt.long in args && !opt.array)) return undefined;
    if (opt.kind === 'boolean') {
      if (inline !== undefined) return undefined;
      args[opt.long] = true;
      continue;
    }
    if (inline === undefined && i + 1 >= argv.length) return undefined;
    const value = inline ?? argv[++i]!;
    if (opt.array) (args[opt.long] = values[opt.long] ??= []).push(value);
    else args[opt.long] = value;
  }
  if (positionals.length !== spec.positionals.length) return undefined;
  spec.positionals.forEach((name, k) => (args[name] = positionals[k]!));
  for (const o of spec.options) {
    if (o.long in args) continue;
    if (o.required) return undefined;
    if (o.default !== undefined) args[o.long] = o.default;
  }
  return { command: spec.name, args, params, logLevel: logLevel ?? DEFAULT_LOG_LEVEL };
}
