/**
 * Argument parsing for `fspl`: yargs declares every subcommand and option of Filespooler 1.2.2,
 * then the chosen subcommand's handler is imported on demand and called with plain values.
 * Usage errors exit 2, runtime errors exit 1 with one `Error: ...` line on stderr.
 */
import yargs, { type Argv } from 'yargs';
import { LEVELS, parseLogLevel, type LogLevel } from '../log.js';
import { reportError, writeOut, UsageError } from './output.js';

export const VERSION_LINE = 'filespooler 1.2.2 (TypeScript fspl 0.1.0)\n';

/** What a handler receives: the parsed options, the log level and the arguments after `--`. */
export interface Invocation {
  command: string;
  args: Record<string, unknown>;
  params: string[];
  logLevel: LogLevel;
}

const SEQFILE = {
  alias: 's',
  type: 'string',
  demandOption: true,
  requiresArg: true,
  describe: 'Sender sequence file (created holding 1 if missing); "-" for none, giving sequence 1',
} as const;
const QUEUEDIR = { alias: 'q', type: 'string', demandOption: true, requiresArg: true, describe: 'Queue directory' } as const;
const DECODER = {
  alias: 'd',
  type: 'string',
  requiresArg: true,
  describe: 'Shell command ($SHELL -c) that turns a stored job file into a packet, e.g. zcat',
} as const;
const JOB = { alias: 'j', type: 'string', demandOption: true, requiresArg: true, describe: 'Sequence number of the job' } as const;

function commonProcess(y: Argv): Argv {
  return y
    .positional('command', { type: 'string', describe: 'Program to run for each job (not run through a shell)' })
    .option('allow-job-params', { type: 'boolean', describe: "Append the job's own parameters after ours" })
    .option('ignore-payload', { type: 'boolean', describe: 'Do not feed the payload to the command' })
    .option('timeout', { type: 'string', requiresArg: true, describe: 'Kill the command with SIGKILL after this many seconds (a failure)' });
}

function enumOption(values: string[], def: string, describe: string) {
  return { type: 'string', requiresArg: true, default: def, describe: `${describe} (${values.join(', ')}; any case)` } as const;
}

type Cmd = [name: string, usage: string, describe: string, builder?: (y: Argv) => Argv];

const COMMANDS: Cmd[] = [
  ['gen-filename', 'gen-filename', 'Print a new job file name, fspl-UUID.fspl'],
  ['gen-uuid', 'gen-uuid', 'Print a new random UUID'],
  [
    'prepare',
    'prepare -s FILE [-i INPUT] [-- PARAMS...]',
    'Write a command packet to stdout (FSPL_SET_* variables are saved in it)',
    (y) =>
      y.option('seqfile', SEQFILE).option('input', {
        alias: 'i',
        type: 'string',
        requiresArg: true,
        describe: 'Payload: a file, or "-" for stdin (default: no payload)',
      }),
  ],
  ['prepare-fail', 'prepare-fail -s FILE', 'Write a Fail packet (always fails) to stdout', (y) => y.option('seqfile', SEQFILE)],
  ['prepare-nop', 'prepare-nop -s FILE', 'Write a NOP packet (always succeeds) to stdout', (y) => y.option('seqfile', SEQFILE)],
  ['prepare-get-next', 'prepare-get-next -s FILE', 'Print the sequence number the next prepare will use', (y) => y.option('seqfile', SEQFILE)],
  [
    'prepare-set-next',
    'prepare-set-next -s FILE ID',
    'Set the sequence number the next prepare will use',
    (y) => y.option('seqfile', SEQFILE).positional('id', { type: 'string', describe: 'The new next sequence number' }),
  ],
  ['queue-get-next', 'queue-get-next -q DIR', 'Print the sequence number the queue will process next', (y) => y.option('queuedir', QUEUEDIR)],
  [
    'queue-info',
    'queue-info -q DIR -j ID [-d DECODER]',
    "Print a queued job's variables, as given to its command",
    (y) => y.option('queuedir', QUEUEDIR).option('job', JOB).option('decoder', DECODER),
  ],
  [
    'queue-init',
    'queue-init -q DIR [--append-only]',
    'Create a queue directory',
    (y) =>
      y.option('queuedir', QUEUEDIR).option('append-only', { type: 'boolean', describe: 'Leave out nextseq: jobs can be written and listed, not processed' }),
  ],
  ['queue-ls', 'queue-ls -q DIR [-d DECODER]', 'List the jobs in a queue', (y) => y.option('queuedir', QUEUEDIR).option('decoder', DECODER)],
  [
    'queue-payload',
    'queue-payload -q DIR -j ID [-d DECODER]',
    "Write a queued job's payload to stdout",
    (y) => y.option('queuedir', QUEUEDIR).option('job', JOB).option('decoder', DECODER),
  ],
  [
    'queue-process',
    'queue-process -q DIR [OPTIONS] COMMAND [-- PARAMS...]',
    'Run the jobs of a queue, in order',
    (y) =>
      commonProcess(y)
        .option('queuedir', QUEUEDIR)
        .option('decoder', DECODER)
        .option('maxjobs', { alias: 'n', type: 'string', requiresArg: true, describe: 'Stop after this many jobs' })
        .option('never-delete', { type: 'boolean', describe: 'Never delete a job file, whatever happens' })
        .option('order-by', enumOption(['Sequence', 'Timestamp'], 'Sequence', 'Processing order'))
        .option('on-error', enumOption(['Retry', 'Delete', 'Leave'], 'Retry', 'What to do when a job fails'))
        .option('output-to', enumOption(['PassBoth', 'SaveBoth'], 'PassBoth', "Where the command's stdout and stderr go (SaveBoth: jobs/FILE.out)")),
  ],
  [
    'queue-set-next',
    'queue-set-next -q DIR ID',
    'Set the sequence number the queue will process next',
    (y) => y.option('queuedir', QUEUEDIR).positional('id', { type: 'string', describe: 'The new next sequence number' }),
  ],
  ['queue-write', 'queue-write -q DIR', 'Store the packet on stdin in a queue (safely: temporary name, fsync, rename)', (y) => y.option('queuedir', QUEUEDIR)],
  ['show-license', 'show-license', 'Print the copyright and license'],
  ['stdin-info', 'stdin-info', "Print the variables of the packet on stdin, as given to its command"],
  ['stdin-payload', 'stdin-payload', 'Write the payload of the packet on stdin to stdout'],
  ['stdin-process', 'stdin-process [OPTIONS] COMMAND [-- PARAMS...]', 'Run the packet on stdin', (y) => commonProcess(y)],
];

/** The positional arguments each subcommand takes (besides `-- PARAMS`). */
const POSITIONALS: Record<string, string[]> = {
  'prepare-set-next': ['id'],
  'queue-set-next': ['id'],
  'queue-process': ['command'],
  'stdin-process': ['command'],
};

/** Which subcommands accept `-- PARAMS...`. */
const TAKES_PARAMS = new Set(['prepare', 'queue-process', 'stdin-process']);

function buildParser(argv: string[]): Argv {
  let y = yargs(argv)
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
    .option('log-level', {
      alias: 'l',
      type: 'string',
      requiresArg: true,
      default: 'info',
      global: true,
      describe: `Log detail on stderr: ${LEVELS.join(', ')} (any case)`,
    })
    .version(false)
    .option('version', { alias: 'V', type: 'boolean', describe: 'Print the version and exit' })
    .help('help')
    .alias('help', 'h')
    .strict()
    .wrap(Math.min(100, process.stdout.columns || 100))
    .exitProcess(false);
  for (const [name, usage, describe, builder] of COMMANDS) {
    const positional = (POSITIONALS[name] ?? []).map((p) => (p === 'command' ? '<command>' : `<${p}>`)).join(' ');
    y = y.command(
      positional ? `${name} ${positional}` : name,
      describe,
      (yy: Argv) => {
        const b = (builder ? builder(yy) : yy).usage(`fspl ${usage}\n\n${describe}`).strict();
        return TAKES_PARAMS.has(name) ? b : b.check((a) => {
          if (Array.isArray(a['--']) && a['--'].length > 0) throw new UsageError(`Unexpected arguments: ${a['--'].join(' ')}`);
          return true;
        });
      },
    );
  }
  y = y.command('help [subcommand]', 'Show help for fspl or one of its subcommands');
  return y;
}

/** -V/--version among the global options (before the subcommand) wins over everything else. */
function wantsVersion(argv: string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-V' || a === '--version') return true;
    if (a === '-l' || a === '--log-level') {
      i++;
      continue;
    }
    if (!a.startsWith('-') || a === '--') return false;
  }
  return false;
}

async function helpText(sub?: string): Promise<string> {
  const args = sub ? [sub, '--help'] : ['--help'];
  return new Promise((resolve) => {
    buildParser(args).parse(args, {}, (_err, _argv, output) => resolve(output));
  });
}

/** Run the CLI; resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  if (wantsVersion(argv)) {
    writeOut(VERSION_LINE);
    return 0;
  }
  const parser = buildParser(argv);
  let usageMessage: string | undefined;
  let parsed: Record<string, unknown>;
  let helpShown = false;
  try {
    parser.fail((msg, err) => {
      throw new UsageError(msg || err?.message || 'invalid arguments');
    });
    parsed = (await parser.parseAsync(argv, {}, (err, _argv, output) => {
      if (err) usageMessage = err.message;
      else if (output) {
        helpShown = true;
        writeOut(`${output}\n`);
      }
    })) as Record<string, unknown>;
  } catch (err) {
    usageMessage ??= (err as Error).message;
    parsed = {};
  }
  if (usageMessage !== undefined) {
    process.stderr.write(`error: ${usageMessage}\n\nFor more information try --help\n`);
    return 2;
  }
  if (helpShown) return 0;
  if (parsed.version) {
    writeOut(VERSION_LINE);
    return 0;
  }
  const command = String((parsed._ as unknown[])[0] ?? '');
  if (command === 'help') {
    const sub = parsed.subcommand as string | undefined;
    writeOut(`${await helpText(sub)}\n`);
    return 0;
  }
  if (!command) {
    process.stderr.write(`${await helpText()}\n`);
    return 2;
  }
  const logLevel = parseLogLevel(String(parsed['log-level']));
  if (!logLevel) {
    process.stderr.write(`error: invalid log level ${JSON.stringify(parsed['log-level'])}: use one of ${LEVELS.join(', ')}\n`);
    return 2;
  }
  if ((parsed._ as unknown[]).length > 1) {
    process.stderr.write(`error: unexpected argument ${JSON.stringify(String((parsed._ as unknown[])[1]))}\n\nFor more information try --help\n`);
    return 2;
  }
  const inv: Invocation = { command, args: parsed, params: ((parsed['--'] as unknown[]) ?? []).map(String), logLevel };
  try {
    const { run } = await import('./commands.js');
    return await run(inv);
  } catch (err) {
    return reportError(err);
  }
}
