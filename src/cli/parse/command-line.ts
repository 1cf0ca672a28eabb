/**
 * A whole command line, read: fspl's global options, then `fspl net ...`, `fspl help ...` or one
 * subcommand, each read by its grammar (read.ts). Help comes back as a topic that text/help.ts
 * renders. The net grammar loads only for `fspl net` and `fspl help` (start-up).
 */
import { UsageError } from '../text/output.js';
import { scanGlobals } from './globals.js';
import type { Invocation } from './grammar.js';
import { checkGlobals, isOption, type Reading, readArguments, unknownSubcommand } from './read.js';
import { COMMAND_BY_NAME, COMMANDS, DEFAULT_LOG_LEVEL, LOG_LEVEL } from './spec.js';

/** Which help: fspl's or `fspl net`'s, all of it or one subcommand's. */
export interface HelpTopic {
  net: boolean;
  command?: string;
}

export type CommandLine =
  | { kind: 'version' }
  | { kind: 'implementation' }
  | { kind: 'run'; net: boolean; invocation: Invocation }
  /** `fspl` alone gives its help as an error: on stderr, status 2. */
  | { kind: 'help'; topic: HelpTopic; asError?: true }
  | { kind: 'usage'; error: UsageError };

/** How fspl's own subcommands read their arguments. */
const FSPL_READING: Reading = { prefix: '', more: '--help', help: ['-h', '--help'], globalsBefore: true };

/** How `fspl net`'s read theirs: options anywhere, --log-level too, `--no-FLAG`. */
const NET_READING: Reading = {
  prefix: 'net ',
  more: 'fspl net --help',
  shared: [LOG_LEVEL],
  help: ['--help'],
  negation: true,
};

/** What `fspl help` names: a subcommand or `net` (then maybe one of its commands). */
const HELP_TOPICS = [...COMMANDS.map((c) => c.name), 'net', 'help'];

const usage = (error: UsageError): CommandLine => ({ kind: 'usage', error });

export async function parseCommandLine(argv: string[]): Promise<CommandLine> {
  const g = scanGlobals(argv);
  if (g.version) return { kind: 'version' };
  if (g.implementation) return { kind: 'implementation' };
  const name = argv[g.end];
  // The options before `net` are read with its command's (--log-level among them).
  if (name === 'net') return parseNet([...argv.slice(0, g.end), ...argv.slice(g.end + 1)], g.help);
  if (g.help)
    return { kind: 'help', topic: { net: false, command: COMMAND_BY_NAME.has(name ?? '') ? name : undefined } };
  if (name === 'help') return helpCommand(argv.slice(g.end + 1));
  const globals = checkGlobals(g);
  if (globals) return usage(globals);
  if (g.logLevels.length > 1) return usage(new UsageError(`the option '--log-level' was given more than once`));
  if (name === undefined) return { kind: 'help', topic: { net: false }, asError: true };
  const spec = COMMAND_BY_NAME.get(name);
  if (!spec) return usage(unknownSubcommand(name, HELP_TOPICS, 'subcommand', '--help'));
  const r = readArguments(spec, argv.slice(g.end + 1), FSPL_READING);
  if (r instanceof UsageError) return usage(r);
  if (r.kind === 'help') return { kind: 'help', topic: { net: false, command: spec.name } };
  return {
    kind: 'run',
    net: false,
    invocation: { command: spec.name, args: r.args, params: r.params, logLevel: g.logLevels[0] ?? DEFAULT_LOG_LEVEL },
  };
}

/**
 * `fspl net ...`, given the arguments after `net` (and the options before it): the net command is
 * the first word that is neither an option nor the log level's value.
 */
async function parseNet(argv: string[], help: boolean): Promise<CommandLine> {
  const { NET_COMMANDS, NET_DEMAND } = await import('./net-spec.js');
  let k = 0;
  while (k < argv.length && argv[k] !== '--' && isOption(argv[k]!))
    k += argv[k] === '-l' || argv[k] === '--log-level' ? 2 : 1;
  const name = argv[k] === '--' ? undefined : argv[k];
  const spec = NET_COMMANDS.find((c) => c.name === name);
  const dashdash = argv.indexOf('--');
  if (name === 'help' || help || (dashdash < 0 ? argv : argv.slice(0, dashdash)).includes('--help')) {
    const named = name === 'help' ? NET_COMMANDS.find((c) => c.name === argv[k + 1]) : spec;
    return { kind: 'help', topic: { net: true, command: named?.name } };
  }
  if (name === undefined) return usage(new UsageError(NET_DEMAND, NET_READING.more));
  const names = NET_COMMANDS.map((c) => c.name);
  if (!spec) return usage(unknownSubcommand(name, names, 'net command', NET_READING.more));
  const r = readArguments(spec, [...argv.slice(0, k), ...argv.slice(k + 1)], NET_READING);
  if (r instanceof UsageError) return usage(r);
  if (r.kind === 'help') return { kind: 'help', topic: { net: true, command: spec.name } };
  return {
    kind: 'run',
    net: true,
    invocation: { command: spec.name, args: r.args, params: r.params, logLevel: String(r.shared[LOG_LEVEL.long]) },
  };
}

/** `fspl help [SUBCOMMAND]` and `fspl help net [COMMAND]`, given what follows `help`. */
async function helpCommand(words: string[]): Promise<CommandLine> {
  const opt = words.find((a) => a.startsWith('-'));
  if (opt !== undefined) return usage(new UsageError(`unexpected argument '${opt}' for help`));
  const [topic, netCommand, extra] = words;
  if (topic !== undefined && !HELP_TOPICS.includes(topic))
    return usage(unknownSubcommand(topic, HELP_TOPICS, 'subcommand', '--help'));
  const unexpected = topic === 'net' ? extra : netCommand;
  if (unexpected !== undefined) return usage(new UsageError(`unexpected argument '${unexpected}'`));
  if (topic !== 'net') return { kind: 'help', topic: { net: false, command: topic === 'help' ? undefined : topic } };
  const names: string[] = (await import('./net-spec.js')).NET_COMMANDS.map((c) => c.name);
  if (netCommand !== undefined && !names.includes(netCommand))
    return usage(unknownSubcommand(netCommand, names, 'net command', 'fspl net --help'));
  return { kind: 'help', topic: { net: true, command: netCommand } };
}
