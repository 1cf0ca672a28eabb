/**
 * The full parser, on yargs: help texts, usage errors, every command line the fast path leaves
 * to it, and `fspl net`. Built from the same grammar (spec.ts).
 */
import yargs, { type Argv, type Options } from 'yargs';
import { COMMANDS, LOG_LEVEL, scanGlobals, type CommandSpec, type Invocation, type OptionSpec } from './spec.js';
import { NET_COMMANDS, NET_DEMAND, NET_USAGE, netPositionals } from './net-spec.js';
import { UsageError, usageText } from './output.js';

/**
 * An option for yargs. The reference's subcommands want a value after every string option
 * (`requiresArg`); `fspl net`'s check their values themselves, as they always have.
 */
function yargsOption(o: OptionSpec, requiresArg = true): Options {
  const describe = o.choices ? `${o.describe} (${o.choices.join(', ')}; any case)` : o.describe;
  const option: Options = {
    alias: o.short,
    type: o.kind,
    demandOption: o.required,
    requiresArg: requiresArg && o.kind === 'string',
    default: o.default,
    describe,
  };
  // An array option given `default: undefined` would default to [undefined]: no key at all.
  if (o.array) {
    option.array = true;
    if (o.default === undefined) delete option.default;
  }
  return option;
}

/** A subcommand's positionals and options, as yargs declares them. */
function declare(b: Argv, spec: CommandSpec, requiresArg: boolean): Argv {
  for (const p of [...spec.positionals, ...(spec.optionalPositionals ?? [])]) {
    const describe = spec.positionalHelp?.[p];
    b = b.positional(p, describe === undefined ? { type: 'string' } : { type: 'string', describe });
  }
  for (const o of spec.options) b = b.option(o.long, yargsOption(o, requiresArg));
  return b;
}

function build(): Argv {
  let y = yargs()
    .scriptName('fspl')
    .usage('fspl [-l LEVEL] COMMAND [OPTIONS]\n\nOrdered, distributed job queues on plain files (Filespooler 1.2.2 compatible).')
    .parserConfiguration({
      'parse-numbers': false,
      'parse-positional-numbers': false,
      'populate--': true,
      'boolean-negation': false,
      'dot-notation': false,
      // Repeated options are refused by precheck unless the grammar says they repeat (`-q` of
      // queue-process): those keep every value.
      'duplicate-arguments-array': true,
      'greedy-arrays': false,
    })
    .option(LOG_LEVEL.long, { ...yargsOption(LOG_LEVEL), global: false })
    .version(false)
    .option('version', { alias: 'V', type: 'boolean', global: false, describe: 'Print the version and exit' })
    .help('help')
    .alias('help', 'h')
    .strict()
    .wrap(Math.min(100, process.stdout.columns || 100))
    .exitProcess(false);
  for (const spec of COMMANDS) {
    const pos = spec.positionals.map((p) => ` <${p}>`).join('');
    y = y.command(`${spec.name}${pos}`, spec.describe, (yy: Argv) => {
      let b = declare(yy.usage(`fspl ${spec.usage}\n\n${spec.describe}`).strict(), spec, true);
      if (!spec.params) {
        b = b.check((a) => {
          const extra = a['--'];
          if (Array.isArray(extra) && extra.length > 0) throw new UsageError(`unexpected arguments after --: ${extra.join(' ')}`);
          return true;
        });
      }
      return b;
    });
  }
  return y.command('help [subcommand]', 'Show help for fspl or one of its subcommands');
}

export type ParseResult =
  | { kind: 'run'; invocation: Invocation }
  | { kind: 'output'; text: string; stream: 'stdout' | 'stderr'; status: number };

export async function helpText(sub?: string): Promise<string> {
  const args = sub ? [sub, '--help'] : ['--help'];
  return new Promise((resolve) => {
    build().parse(args, {}, (_err, _argv, output) => resolve(output));
  });
}

function usageError(message: string, more?: string): ParseResult {
  return { kind: 'output', text: usageText(new UsageError(message, more)), stream: 'stderr', status: 2 };
}

/**
 * What yargs would let through but the reference refuses (and the other way round): an option
 * given twice, and `help` with options. Also spells `-lLEVEL` as `-l LEVEL` for yargs.
 * Returns the command line to hand to yargs, or a usage error.
 */
function precheck(argv: string[]): string[] | ParseResult {
  const g = scanGlobals(argv);
  const out = g.normalized;
  const name = argv[g.end];
  const rest = argv.slice(g.end);
  const spec = COMMANDS.find((c) => c.name === name);
  if (name === 'help') {
    const opt = rest.slice(1).find((a) => a.startsWith('-'));
    if (opt !== undefined) return usageError(`unexpected argument '${opt}' for help`);
  }
  if (spec) {
    const seen = new Set<string>();
    for (let k = 1; k < rest.length; k++) {
      const a = rest[k]!;
      if (a === '--') {
        // yargs would file what follows under `--`; positionals after it are still positionals.
        if (!spec.params && spec.positionals.length > 0) rest.splice(k, 1);
        break;
      }
      let o: OptionSpec | undefined;
      if (a.startsWith('--')) o = spec.options.find((x) => x.long === a.slice(2).split('=')[0]);
      else if (a.startsWith('-') && a.length > 1) o = spec.options.find((x) => x.short === a[1]);
      if (!o) continue;
      // yargs would take `--flag=VALUE` for a flag (and ignore VALUE); the reference refuses it.
      if (o.kind === 'boolean' && a.includes('=')) return usageError(`the option '--${o.long}' takes no value`);
      if (seen.has(o.long) && !o.array) return usageError(`the option '--${o.long}' was given more than once`);
      seen.add(o.long);
      if (o.kind === 'string' && !a.includes('=') && !(a.length > 2 && !a.startsWith('--'))) k++;
    }
  }
  return out.concat(rest);
}

export async function parseFull(rawArgv: string[]): Promise<ParseResult> {
  const checked = precheck(rawArgv);
  if (!Array.isArray(checked)) return checked;
  const argv = checked;
  let failure: string | undefined;
  let help: string | undefined;
  let parsed: Record<string, unknown> = {};
  const parser = build().fail((msg, err) => {
    throw new UsageError(msg || err?.message || 'invalid arguments');
  });
  try {
    parsed = (await parser.parseAsync(argv, {}, (err, _argv, output) => {
      if (err) failure = err.message;
      else if (output) help = output;
    })) as Record<string, unknown>;
  } catch (err) {
    failure ??= (err as Error).message;
  }
  if (failure !== undefined) return usageError(failure);
  if (help !== undefined) return { kind: 'output', text: `${help}\n`, stream: 'stdout', status: 0 };
  const rest = parsed._ as unknown[];
  const command = String(rest[0] ?? '');
  if (command === 'help') {
    const sub = parsed.subcommand as string | undefined;
    if (sub !== undefined && !COMMANDS.some((c) => c.name === sub)) return usageError(`unknown subcommand '${sub}'`);
    return { kind: 'output', text: `${await helpText(sub)}\n`, stream: 'stdout', status: 0 };
  }
  if (!command) return { kind: 'output', text: `${await helpText()}\n`, stream: 'stderr', status: 2 };
  if (rest.length > 1) return usageError(`unexpected argument '${String(rest[1])}'`);
  return {
    kind: 'run',
    invocation: {
      command,
      args: parsed,
      params: ((parsed['--'] as unknown[] | undefined) ?? []).map(String),
      logLevel: String(parsed[LOG_LEVEL.long] ?? LOG_LEVEL.default),
    },
  };
}

/**
 * `fspl net`'s grammar for yargs: the net commands of spec.ts under the program name `fspl net`,
 * with yargs' defaults for the rest (its own help, its own `help` command, no `-h`), as it has
 * always had. Options are global here, as `--log-level` has always been.
 */
function buildNet(): Argv {
  let y = yargs()
    .scriptName('fspl net')
    .usage(NET_USAGE)
    .option(LOG_LEVEL.long, yargsOption(LOG_LEVEL, false));
  for (const spec of NET_COMMANDS) {
    y = y.command(`${spec.name}${netPositionals(spec)}`, spec.describe, (b: Argv) => declare(b.usage(`fspl ${spec.usage}\n\n${spec.describe}`), spec, false));
  }
  return y
    .demandCommand(1, NET_DEMAND)
    .strict()
    .help()
    .version(false)
    .wrap(Math.min(100, process.stdout.columns || 100))
    .exitProcess(false);
}

/**
 * `fspl net ...` (the arguments after `net`, globals before it kept): the invocation of one net
 * subcommand (named without `net`), or its help, or its usage error. What follows `--` is the
 * invocation's params, whatever the subcommand.
 */
export async function parseNet(argv: string[]): Promise<ParseResult> {
  const dashdash = argv.indexOf('--');
  const params = dashdash >= 0 ? argv.slice(dashdash + 1) : [];
  const args = dashdash >= 0 ? argv.slice(0, dashdash) : argv;
  let usage: string | undefined;
  let help = '';
  const parser = buildNet().fail((msg, err) => {
    if (err) throw err;
    usage = msg;
  });
  const parsed = (await parser.parseAsync(args, {}, (_err, _argv, output) => {
    help = output;
  })) as Record<string, unknown>;
  if (usage !== undefined) return usageError(usage, 'fspl net --help');
  if (help) return { kind: 'output', text: `${help}\n`, stream: 'stdout', status: 0 };
  return {
    kind: 'run',
    invocation: { command: String((parsed._ as unknown[])[0]), args: parsed, params, logLevel: String(parsed[LOG_LEVEL.long] ?? LOG_LEVEL.default) },
  };
}
