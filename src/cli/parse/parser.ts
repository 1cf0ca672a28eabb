/**
 * The full parser, on yargs: help texts, usage errors, every command line the fast path leaves
 * to it, and `fspl net`. Built from the same grammar (spec.ts).
 */
import yargs, { type Arguments, type Argv, type Options } from 'yargs';
import { IMPLEMENTATION_NOTE } from '../commands/implementation.js';
import { UsageError, usageText } from '../text/output.js';
import { type Globals, scanGlobals } from './globals.js';
import { argsOf, type CommandSpec, type Invocation, type OptionSpec } from './grammar.js';
import { NET_COMMANDS, NET_DEMAND, NET_SUMMARY, NET_USAGE, netPositionals } from './net-spec.js';
import { COMMANDS, LOG_LEVEL } from './spec.js';
import { checkArguments, checkGlobals, type Reading, unknownSubcommand } from './usage.js';

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
    .usage(`fspl [-l LEVEL] COMMAND [OPTIONS]\n\nOrdered, distributed job queues on plain files (Filespooler 1.2.2 compatible).\n${IMPLEMENTATION_NOTE}`)
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
      // Options are known by their own names only: no camelCase twin to leak into a message.
      'camel-case-expansion': false,
    })
    .option(LOG_LEVEL.long, { ...yargsOption(LOG_LEVEL), global: false })
    .version(false)
    .option('version', { alias: 'V', type: 'boolean', global: false, describe: 'Print the version (of Filespooler, as the reference does) and exit' })
    .option('implementation', {
      type: 'boolean',
      global: false,
      describe: 'Say which fspl this is (this TypeScript one: its version and where it runs from) and exit',
    })
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
  // `fspl net` is parsed apart (main.ts): listed here for the help alone.
  return y.command('net <command>', NET_SUMMARY).command('help [subcommand]', 'Show help for fspl or one of its subcommands (help net [COMMAND]: of fspl net)');
}

/** The words after `--`, as yargs keeps them. */
function listOf(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}

export type ParseResult = { kind: 'run'; invocation: Invocation } | { kind: 'output'; text: string; stream: 'stdout' | 'stderr'; status: number };

export async function helpText(sub?: string): Promise<string> {
  const args = sub ? [sub, '--help'] : ['--help'];
  return new Promise((resolve) => {
    build().parse(args, {}, (_err, _argv, output) => resolve(output));
  });
}

/** A usage error as the parser gives it: on stderr, exit status 2. */
function output(err: UsageError): ParseResult {
  return { kind: 'output', text: usageText(err), stream: 'stderr', status: 2 };
}

function usageError(message: string, more?: string): ParseResult {
  return output(new UsageError(message, more));
}

/** How fspl's own subcommands read their arguments (usage.ts). */
const FSPL_READING: Reading = { prefix: '', more: '--help', requiresArg: true, help: ['-h', '--help'], globalsBefore: true };

/** What `fspl help` names: a subcommand or `net` (then maybe one of its commands); also the words that may come where fspl wants its subcommand. */
const HELP_TOPICS = [...COMMANDS.map((c) => c.name), 'net', 'help'];

/**
 * The usage errors found on the grammar (usage.ts), before yargs: an unknown subcommand or
 * option, a value or an argument missing, and what yargs would let through but the reference
 * refuses (an option given twice, a flag with a value, `help` with options). Also spells
 * `-lLEVEL` as `-l LEVEL` for yargs. Returns the command line to hand to yargs, or a usage error.
 */
function precheck(argv: string[], g: Globals): string[] | ParseResult {
  const globals = checkGlobals(g);
  if (globals && !g.help) return output(globals);
  const out = g.normalized;
  const name = argv[g.end];
  const rest = argv.slice(g.end);
  if (name === undefined || g.help) return out.concat(rest);
  const spec = COMMANDS.find((c) => c.name === name);
  if (!spec) return output(unknownSubcommand(name, HELP_TOPICS, 'subcommand', '--help'));
  const problem = checkArguments(spec, rest.slice(1), FSPL_READING);
  if (problem) return output(problem);
  // yargs would file what follows `--` under `--`; without PARAMS, those are still positionals.
  const dashdash = rest.indexOf('--');
  if (dashdash > 0 && !spec.params && spec.positionals.length > 0) rest.splice(dashdash, 1);
  return out.concat(rest);
}

/** `fspl help [SUBCOMMAND]` and `fspl help net [COMMAND]`, given what follows `help`. */
async function helpCommand(words: string[]): Promise<ParseResult> {
  const opt = words.find((a) => a.startsWith('-'));
  if (opt !== undefined) return usageError(`unexpected argument '${opt}' for help`);
  const [topic, netCommand, extra] = words;
  if (topic !== undefined && !HELP_TOPICS.includes(topic)) return output(unknownSubcommand(topic, HELP_TOPICS, 'subcommand', '--help'));
  const unexpected = topic === 'net' ? extra : netCommand;
  if (unexpected !== undefined) return usageError(`unexpected argument '${unexpected}'`);
  if (netCommand !== undefined && !NET_COMMANDS.some((c) => c.name === netCommand)) {
    return output(
      unknownSubcommand(
        netCommand,
        NET_COMMANDS.map((c) => c.name),
        'net command',
        'fspl net --help',
      ),
    );
  }
  const text = topic === 'net' ? await netHelpText(netCommand) : await helpText(topic === 'help' ? undefined : topic);
  return { kind: 'output', text: `${text}\n`, stream: 'stdout', status: 0 };
}

export async function parseFull(rawArgv: string[]): Promise<ParseResult> {
  const g = scanGlobals(rawArgv);
  if (!g.help && !g.version && rawArgv[g.end] === 'help') return helpCommand(rawArgv.slice(g.end + 1));
  const checked = precheck(rawArgv, g);
  if (!Array.isArray(checked)) return checked;
  const argv = checked;
  let failure: string | undefined;
  let help: string | undefined;
  let parsed: Arguments | undefined;
  const parser = build().fail((msg, err) => {
    throw new UsageError(msg || err?.message || 'invalid arguments');
  });
  try {
    parsed = await parser.parseAsync(argv, {}, (err, _argv, output) => {
      if (err) failure = err.message;
      else if (output) help = output;
    });
  } catch (err) {
    failure ??= (err as Error).message;
  }
  if (failure !== undefined) return usageError(failure);
  if (help !== undefined) return { kind: 'output', text: `${help}\n`, stream: 'stdout', status: 0 };
  if (!parsed) return usageError('invalid arguments');
  const rest = parsed._;
  const command = String(rest[0] ?? '');
  if (!command) return { kind: 'output', text: `${await helpText()}\n`, stream: 'stderr', status: 2 };
  if (rest.length > 1) return usageError(`unexpected argument '${String(rest[1])}'`);
  const spec = COMMANDS.find((c) => c.name === command);
  if (!spec) return output(unknownSubcommand(command, HELP_TOPICS, 'subcommand', '--help'));
  return {
    kind: 'run',
    invocation: {
      command,
      args: argsOf(spec, (name) => parsed[name]),
      params: listOf(parsed['--']),
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
    .parserConfiguration({ 'camel-case-expansion': false })
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

/** `fspl net --help`, or one net command's. */
async function netHelpText(command?: string): Promise<string> {
  const args = command ? [command, '--help'] : ['--help'];
  return new Promise((resolve) => {
    buildNet().parse(args, {}, (_err, _argv, output) => resolve(output));
  });
}

/** How `fspl net`'s commands read their arguments (usage.ts): options anywhere, --log-level too. */
const NET_READING: Reading = { prefix: 'net ', more: 'fspl net --help', requiresArg: false, shared: [LOG_LEVEL], help: ['--help'], negation: true };

/**
 * The usage errors of a net command line found on the grammar (usage.ts), before yargs: the net
 * command is its first word that is neither an option nor the log level's value.
 */
function precheckNet(args: string[]): UsageError | undefined {
  if (args.includes('--help')) return undefined;
  let k = 0;
  while (k < args.length && args[k]!.startsWith('-') && args[k] !== '-') k += args[k] === '-l' || args[k] === '--log-level' ? 2 : 1;
  const name = args[k];
  if (name === undefined || name === 'help') return undefined; // yargs says what is missing, or shows the help
  const spec = NET_COMMANDS.find((c) => c.name === name);
  if (!spec)
    return unknownSubcommand(
      name,
      NET_COMMANDS.map((c) => c.name),
      'net command',
      NET_READING.more,
    );
  return checkArguments(spec, [...args.slice(0, k), ...args.slice(k + 1)], NET_READING);
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
  const problem = precheckNet(args);
  if (problem) return output(problem);
  let usage: string | undefined;
  let help = '';
  const parser = buildNet().fail((msg, err) => {
    if (err) throw err;
    usage = msg;
  });
  const parsed = await parser.parseAsync(args, {}, (_err, _argv, output) => {
    help = output;
  });
  if (usage !== undefined) return usageError(usage, 'fspl net --help');
  if (help) return { kind: 'output', text: `${help}\n`, stream: 'stdout', status: 0 };
  const command = String(parsed._[0]);
  const spec = NET_COMMANDS.find((c) => c.name === command);
  if (!spec)
    return output(
      unknownSubcommand(
        command,
        NET_COMMANDS.map((c) => c.name),
        'net command',
        NET_READING.more,
      ),
    );
  return {
    kind: 'run',
    invocation: { command, args: argsOf(spec, (name) => parsed[name]), params, logLevel: String(parsed[LOG_LEVEL.long] ?? LOG_LEVEL.default) },
  };
}
