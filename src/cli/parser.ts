/**
 * The full parser, on yargs: help texts, usage errors, and every command line the fast path
 * leaves to it. Built from the same grammar (spec.ts).
 */
import yargs, { type Argv, type Options } from 'yargs';
import { COMMANDS, LOG_LEVEL, scanGlobals, type Invocation, type OptionSpec } from './spec.js';
import { UsageError } from './output.js';

function yargsOption(o: OptionSpec): Options {
  const describe = o.choices ? `${o.describe} (${o.choices.join(', ')}; any case)` : o.describe;
  return {
    alias: o.short,
    type: o.kind,
    demandOption: o.required,
    requiresArg: o.kind === 'string',
    default: o.default,
    describe,
  };
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
      'duplicate-arguments-array': false,
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
      let b = yy.usage(`fspl ${spec.usage}\n\n${spec.describe}`).strict();
      for (const p of spec.positionals) b = b.positional(p, { type: 'string' });
      for (const o of spec.options) b = b.option(o.long, yargsOption(o));
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

function usageError(message: string): ParseResult {
  return { kind: 'output', text: `error: ${message}\n\nFor more information try --help\n`, stream: 'stderr', status: 2 };
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
      if (seen.has(o.long)) return usageError(`the option '--${o.long}' was given more than once`);
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
