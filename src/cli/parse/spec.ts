/**
 * The command-line grammar of fspl as data: every subcommand and option of Filespooler 1.2.2
 * (the `fspl net` subcommands, an extension, are in net-spec.ts, in these types). One reader
 * reads command lines by it (read.ts); yargs renders its help (text/help.ts).
 */
import { type ArgsOf, type CommandSpec, type Invocation, invocationOf, type OptionSpec } from './grammar.js';
import {
  allowedSigners,
  decoder,
  job,
  json,
  maxHeaderSize,
  prepareExtensions,
  processCommon,
  queuedir,
  seqfile,
  signing,
  verifyDecoder,
} from './spec-options.js';
import { QUEUE_PROCESS, QUEUE_RECEIVE, QUEUE_RETRY, QUEUE_SEND, QUEUE_STATUS } from './spec-queues.js';

export const DEFAULT_LOG_LEVEL = 'info';

export const LOG_LEVEL: OptionSpec = {
  long: 'log-level',
  short: 'l',
  kind: 'string',
  value: 'LEVEL',
  default: DEFAULT_LOG_LEVEL,
  describe: 'Log detail on stderr: trace, debug, info, warn or error (any case), or 1 (error) to 5 (trace)',
};

export const COMMANDS = [
  {
    name: 'gen-filename',
    usage: 'gen-filename',
    describe: 'Print a new job file name, fspl-UUID.fspl',
    options: [],
    positionals: [],
    params: false,
  },
  {
    name: 'gen-uuid',
    usage: 'gen-uuid',
    describe: 'Print a new random UUID',
    options: [],
    positionals: [],
    params: false,
  },
  {
    name: 'prepare',
    usage:
      'prepare -s FILE [-i INPUT] [--seal] [--sign KEY | --sign-command CMD] ' +
      '[--retries N] [--not-before TIME] [-- PARAMS...]',
    describe: 'Write a command packet to stdout; FSPL_SET_* variables are saved in it',
    options: [
      seqfile,
      {
        long: 'input',
        short: 'i',
        kind: 'string',
        value: 'INPUT',
        describe: 'Payload: a file, or "-" for stdin (default: no payload)',
      },
      {
        long: 'seal',
        kind: 'boolean',
        describe:
          "Record the payload's length and CRC-32 in the header, so that readers " +
          'refuse a cut or corrupted payload (an extension; default with ' +
          'FSPL_SEAL=1; a piped payload is spooled to $TMPDIR first)',
      },
      ...signing,
      ...prepareExtensions,
    ],
    positionals: [],
    params: true,
  },
  {
    name: 'prepare-fail',
    usage: 'prepare-fail -s FILE [--sign KEY | --sign-command CMD]',
    describe: 'Write a Fail packet (always fails) to stdout',
    options: [seqfile, ...signing],
    positionals: [],
    params: false,
  },
  {
    name: 'prepare-nop',
    usage: 'prepare-nop -s FILE [--sign KEY | --sign-command CMD]',
    describe: 'Write a NOP packet (always succeeds) to stdout',
    options: [seqfile, ...signing],
    positionals: [],
    params: false,
  },
  {
    name: 'prepare-get-next',
    usage: 'prepare-get-next -s FILE',
    describe: 'Print the sequence number the next prepare will use',
    options: [seqfile],
    positionals: [],
    params: false,
  },
  {
    name: 'prepare-set-next',
    usage: 'prepare-set-next -s FILE ID',
    describe: 'Set the sequence number the next prepare will use',
    options: [seqfile],
    positionals: ['id'],
    positionalHelp: { id: 'the sequence number the next prepare will use' },
    params: false,
  },
  {
    name: 'queue-get-next',
    usage: 'queue-get-next -q DIR [--json]',
    describe: 'Print the sequence number the queue will process next',
    options: [queuedir, json],
    positionals: [],
    params: false,
  },
  {
    name: 'queue-info',
    usage: 'queue-info -q DIR -j ID [-d DECODER] [--max-header-size BYTES] [--json]',
    describe: "Print a queued job's variables, as its command would get them",
    options: [queuedir, job, decoder, maxHeaderSize, json],
    positionals: [],
    params: false,
  },
  {
    name: 'queue-init',
    usage: 'queue-init -q DIR [--append-only]',
    describe: 'Create a queue directory',
    options: [
      queuedir,
      {
        long: 'append-only',
        kind: 'boolean',
        describe: 'Leave out nextseq: jobs can be written and listed, not processed',
      },
    ],
    positionals: [],
    params: false,
  },
  {
    name: 'queue-ls',
    usage: 'queue-ls -q DIR [-d DECODER] [--max-header-size BYTES] [--json]',
    describe: 'List the jobs in a queue',
    options: [queuedir, decoder, maxHeaderSize, json],
    positionals: [],
    params: false,
  },
  {
    name: 'queue-payload',
    usage: 'queue-payload -q DIR -j ID [-d DECODER] [--max-header-size BYTES]',
    describe: "Write a queued job's payload to stdout",
    options: [queuedir, job, decoder, maxHeaderSize],
    positionals: [],
    params: false,
  },
  QUEUE_PROCESS,
  QUEUE_STATUS,
  QUEUE_RECEIVE,
  QUEUE_SEND,
  QUEUE_RETRY,
  {
    name: 'queue-set-next',
    usage: 'queue-set-next -q DIR ID',
    describe: 'Set the sequence number the queue will process next',
    options: [queuedir],
    positionals: ['id'],
    positionalHelp: { id: 'the sequence number the queue will process next' },
    params: false,
  },
  {
    name: 'queue-write',
    usage: 'queue-write -q DIR [--allowed-signers FILE]',
    describe: 'Store the packet on stdin in a queue (temporary name, fsync, rename)',
    options: [queuedir, allowedSigners],
    positionals: [],
    params: false,
  },
  {
    name: 'show-license',
    usage: 'show-license',
    describe: 'Print the copyright and license',
    options: [],
    positionals: [],
    params: false,
  },
  {
    name: 'stdin-info',
    usage: 'stdin-info [--json]',
    describe: 'Print the variables of the packet on stdin, as its command would get them',
    options: [json],
    positionals: [],
    params: false,
  },
  {
    name: 'stdin-payload',
    usage: 'stdin-payload',
    describe: 'Write the payload of the packet on stdin to stdout',
    options: [],
    positionals: [],
    params: false,
  },
  {
    name: 'stdin-signature',
    usage: 'stdin-signature [--data]',
    describe:
      'Extension: print the signature of the signed packet on stdin, armored ' +
      'as ssh-keygen -Y verify reads it (-s); --data: the bytes it signs',
    options: [
      {
        long: 'data',
        kind: 'boolean',
        describe: 'Print the exact bytes the signature signs instead (for ssh-keygen -Y verify on stdin)',
      },
    ],
    positionals: [],
    params: false,
  },
  {
    name: 'stdin-process',
    usage: 'stdin-process [-d DECODER [--verify-decoder]] [OPTIONS] COMMAND [-- PARAMS...]',
    describe: 'Run the packet on stdin',
    options: [
      {
        ...decoder,
        describe:
          'Extension: shell command ($SHELL -c) that turns stdin into the packet, ' +
          'e.g. zcat (as queue-process -d does for a stored job file)',
      },
      verifyDecoder,
      ...processCommon,
      allowedSigners,
    ],
    positionals: ['command'],
    positionalHelp: { command: 'the command to run for the packet (its arguments go after --)' },
    params: true,
  },
] as const satisfies readonly CommandSpec[];

export const COMMAND_BY_NAME: ReadonlyMap<string, CommandSpec> = new Map(COMMANDS.map((c) => [c.name, c]));

/** An fspl subcommand's grammar, and its name. */
export type FsplCommand = (typeof COMMANDS)[number];
export type FsplCommandName = FsplCommand['name'];
/** An fspl subcommand's parsed arguments, typed from its grammar. */
export type FsplArgs<N extends FsplCommandName> = ArgsOf<Extract<FsplCommand, { name: N }>>;

/** An fspl subcommand's invocation, typed from its grammar (invocationOf). */
export function fsplInvocation<N extends FsplCommandName>(inv: Invocation, name: N): Invocation<FsplArgs<N>> {
  return invocationOf(inv, COMMAND_BY_NAME.get(name)!);
}
