/**
 * The help texts, built by yargs from the grammar (spec.ts, net-spec.ts): yargs' one role here.
 * Command lines are read by parse/read.ts; yargs loads only when help is asked for.
 */
import yargs, { type Argv, type Options } from 'yargs';
import { IMPLEMENTATION_NOTE } from '../commands/implementation.js';
import type { HelpTopic } from '../parse/command-line.js';
import type { CommandSpec, OptionSpec } from '../parse/grammar.js';
import { NET_COMMANDS, NET_DEMAND, NET_SUMMARY, NET_USAGE, netPositionals } from '../parse/net-spec.js';
import { COMMANDS, LOG_LEVEL } from '../parse/spec.js';

/** An option as yargs lists it in help. */
function yargsOption(o: OptionSpec): Options {
  const describe = o.choices ? `${o.describe} (${o.choices.join(', ')}; any case)` : o.describe;
  const option: Options = { alias: o.short, type: o.kind, demandOption: o.required, default: o.default, describe };
  // An array option given `default: undefined` would show [undefined].
  if (o.array) {
    option.array = true;
    if (o.default === undefined) delete option.default;
  }
  return option;
}

/** A subcommand's positionals and options, as yargs declares them. */
function declare(b: Argv, spec: CommandSpec): Argv {
  for (const p of [...spec.positionals, ...(spec.optionalPositionals ?? [])]) {
    const describe = spec.positionalHelp?.[p];
    b = b.positional(p, describe === undefined ? { type: 'string' } : { type: 'string', describe });
  }
  for (const o of spec.options) b = b.option(o.long, yargsOption(o));
  return b;
}

const WIDTH = () => Math.min(100, process.stdout.columns || 100);

function build(): Argv {
  let y = yargs()
    .scriptName('fspl')
    .usage(
      `fspl [-l LEVEL] COMMAND [OPTIONS]\n\nOrdered, distributed job queues ` +
        `on plain files (Filespooler 1.2.2 compatible).\n${IMPLEMENTATION_NOTE}`,
    )
    // Not global: fspl's own options go before the subcommand, and its help does not list them.
    .option(LOG_LEVEL.long, { ...yargsOption(LOG_LEVEL), global: false })
    .version(false)
    .option('version', {
      alias: 'V',
      type: 'boolean',
      global: false,
      describe: 'Print the version (of Filespooler, as the reference does) and exit',
    })
    .option('implementation', {
      type: 'boolean',
      global: false,
      describe: 'Say which fspl this is (this TypeScript one: its version and where it runs from) and exit',
    })
    .help('help')
    .alias('help', 'h')
    .wrap(WIDTH())
    .exitProcess(false);
  for (const spec of COMMANDS) {
    const pos = spec.positionals.map((p) => ` <${p}>`).join('');
    y = y.command(`${spec.name}${pos}`, spec.describe, (b: Argv) =>
      declare(b.usage(`fspl ${spec.usage}\n\n${spec.describe}`), spec),
    );
  }
  return y
    .command('net <command>', NET_SUMMARY)
    .command('help [subcommand]', 'Show help for fspl or one of its subcommands (help net [COMMAND]: of fspl net)');
}

/** `fspl net`'s help: the net commands under the program name `fspl net`, yargs' own help command among them. */
function buildNet(): Argv {
  let y = yargs().scriptName('fspl net').usage(NET_USAGE).option(LOG_LEVEL.long, yargsOption(LOG_LEVEL));
  for (const spec of NET_COMMANDS) {
    y = y.command(`${spec.name}${netPositionals(spec)}`, spec.describe, (b: Argv) =>
      declare(b.usage(`fspl ${spec.usage}\n\n${spec.describe}`), spec),
    );
  }
  return y.demandCommand(1, NET_DEMAND).help().version(false).wrap(WIDTH()).exitProcess(false);
}

/** The help of a topic, as yargs renders it for `--help` (ending in a newline). */
export function helpText(topic: HelpTopic): Promise<string> {
  const args = topic.command ? [topic.command, '--help'] : ['--help'];
  return new Promise((resolve) => {
    (topic.net ? buildNet() : build()).parse(args, {}, (_err, _argv, output) => resolve(`${output}\n`));
  });
}
