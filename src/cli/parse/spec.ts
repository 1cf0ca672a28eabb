/**
 * The command-line grammar of fspl as data: every subcommand and option of Filespooler 1.2.2
 * (the `fspl net` subcommands, an extension, are in net-spec.ts, in these types). One reader
 * reads command lines by it (read.ts); yargs renders its help (text/help.ts).
 */
import { type ArgsOf, type CommandSpec, type Invocation, invocationOf, type OptionSpec } from './grammar.js';
import {
  allowedSigners,
  decoder,
  failureHandling,
  job,
  jobsAcross,
  json,
  maxHeaderSize,
  outputTo,
  prepareExtensions,
  processCommon,
  queuedir,
  seqfile,
  signing,
  verifyDecoder,
} from './spec-options.js';

export const DEFAULT_LOG_LEVEL = 'info';

export const LOG_LEVEL: OptionSpec = {
  long: 'log-level',
  short: 'l',
  kind: 'string',
  value: 'LEVEL',
  default: DEFAULT_LOG_LEVEL,
  describe: 'Log detail on stderr: trace, debug, info, warn or error (any case), or 1 (error) to 5 (trace)',
};

const RECEIVE_DESCRIBE =
  'Extension: store the framed packets on stdin (from queue-send --to nncp:, as an NNCP exec handle) in a queue, each exactly once, in whatever order they come';

export const COMMANDS = [
  { name: 'gen-filename', usage: 'gen-filename', describe: 'Print a new job file name, fspl-UUID.fspl', options: [], positionals: [], params: false },
  { name: 'gen-uuid', usage: 'gen-uuid', describe: 'Print a new random UUID', options: [], positionals: [], params: false },
  {
    name: 'prepare',
    usage: 'prepare -s FILE [-i INPUT] [--seal] [--sign KEY | --sign-command CMD] [--retries N] [--not-before TIME] [-- PARAMS...]',
    describe: 'Write a command packet to stdout; FSPL_SET_* variables are saved in it',
    options: [
      seqfile,
      { long: 'input', short: 'i', kind: 'string', value: 'INPUT', describe: 'Payload: a file, or "-" for stdin (default: no payload)' },
      {
        long: 'seal',
        kind: 'boolean',
        describe:
          "Record the payload's length and CRC-32 in the header, so that readers refuse a cut or corrupted payload (an extension; default with FSPL_SEAL=1; a piped payload is spooled to $TMPDIR first)",
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
    options: [queuedir, { long: 'append-only', kind: 'boolean', describe: 'Leave out nextseq: jobs can be written and listed, not processed' }],
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
  {
    name: 'queue-process',
    usage:
      'queue-process {-q DIR... | --queues-in PARENT...} [--jobs N] [OPTIONS] [--watch [--poll-interval SECONDS] [--listen [HOST:]PORT]] COMMAND [-- PARAMS...]',
    describe: 'Run the jobs of a queue, in order (or of many queues, each in its own order)',
    options: [
      {
        ...queuedir,
        required: false,
        array: true,
        describe: 'Queue directory; give -q more than once to serve several queues in one process (an extension)',
      },
      {
        long: 'queues-in',
        kind: 'string',
        array: true,
        value: 'PARENT',
        describe: 'Extension: serve every queue directory directly under PARENT (with --watch, also those made later); may be repeated',
      },
      jobsAcross,
      decoder,
      verifyDecoder,
      maxHeaderSize,
      { long: 'maxjobs', short: 'n', kind: 'string', value: 'N', describe: 'Stop after this many jobs' },
      { long: 'never-delete', kind: 'boolean', describe: 'Never delete a job file, whatever happens' },
      { long: 'order-by', kind: 'string', value: 'ORDER', default: 'Sequence', choices: ['Sequence', 'Timestamp'], describe: 'Processing order' },
      { long: 'on-error', kind: 'string', value: 'ACTION', default: 'Retry', choices: ['Retry', 'Delete', 'Leave'], describe: 'What to do when a job fails' },
      ...failureHandling,
      outputTo,
      ...processCommon,
      {
        long: 'watch',
        kind: 'boolean',
        describe: 'Extension: keep running and process new jobs as they arrive; SIGTERM or SIGINT stops after the current job, a second one stops it',
      },
      {
        long: 'poll-interval',
        kind: 'string',
        value: 'SECONDS',
        describe: 'Extension, with --watch: look for new jobs every SECONDS (e.g. 0.5) instead of using file system events (NFS, FUSE)',
      },
      {
        long: 'listen',
        kind: 'string',
        value: '[HOST:]PORT',
        describe:
          'Extension, with --watch: serve a live, read-only page of the queues and /metrics for Prometheus at HOST:PORT (HOST 127.0.0.1 unless given; PORT 0: any free one; the address is logged)',
      },
      {
        long: 'allow-host',
        kind: 'string',
        array: true,
        value: 'NAME',
        describe: 'Extension, with --listen: a name (or address) the page answers to besides its address, localhost and 127.0.0.1/[::1]; repeat per name',
      },
      { long: 'no-progress', kind: 'boolean', describe: 'Extension: no progress line on stderr (it is shown only when stderr is a terminal)' },
      {
        long: 'verify',
        kind: 'boolean',
        describe: "Extension: read a sealed job's payload once to check its CRC-32 before running the command (its length is always checked)",
      },
      allowedSigners,
    ],
    positionals: ['command'],
    positionalHelp: { command: 'the command to run for each job (its arguments go after --)' },
    params: true,
  },
  {
    name: 'queue-status',
    usage: 'queue-status {-q DIR | --queues-in PARENT...} [-d DECODER] [--max-header-size BYTES] [--allowed-signers FILE] [--json]',
    describe: 'Extension: diagnose a queue (next job, gaps, duplicates, unreadable, refused or stray files, lock); exit 3 if it is stuck',
    options: [
      { ...queuedir, required: false },
      {
        long: 'queues-in',
        kind: 'string',
        array: true,
        value: 'PARENT',
        describe: 'Diagnose every queue directly under PARENT, in name order (with --json, one line each: JSON Lines); exit 3 if any is stuck; may be repeated',
      },
      decoder,
      maxHeaderSize,
      allowedSigners,
      json,
    ],
    positionals: [],
    params: false,
  },
  {
    name: 'queue-receive',
    usage: 'queue-receive -q DIR [--from NODE]... [--allowed-signers FILE]',
    describe: RECEIVE_DESCRIBE,
    options: [
      queuedir,
      allowedSigners,
      {
        long: 'from',
        kind: 'string',
        array: true,
        value: 'NODE',
        describe:
          'Extension: take packets only from this NNCP node (its id, or its name in the NNCP config: $NNCPCFG, else /etc/nncp.hjson), as NNCP_SENDER says; may be repeated. Refused, nothing stored, when NNCP_SENDER is another node or unset',
      },
    ],
    positionals: [],
    params: false,
  },
  {
    name: 'queue-send',
    usage:
      'queue-send -q OUTBOX --to ssh:HOST:QUEUE|nncp:NODE:HANDLE [--ssh COMMAND] [--remote-fspl PATH] [--watch [--poll-interval SECONDS]] [--json] | fspl queue-send -q OUTBOX --status [--json]',
    describe:
      'Extension: send the packets of a local queue (an outbox) to a queue on another host over ssh (or through NNCP), in order, many at once, each exactly once; retried after an outage',
    options: [
      {
        ...queuedir,
        value: 'OUTBOX',
        what: 'the outbox, a local queue',
        describe: 'The outbox: a local queue whose packets are sent (and removed once received)',
      },
      {
        long: 'to',
        kind: 'string',
        value: 'DEST',
        what: 'where to send, ssh:HOST:QUEUE or nncp:NODE:HANDLE',
        describe:
          'Where to send: ssh:HOST:QUEUE, HOST as ssh takes it (user@host, an alias), QUEUE the queue directory there; or nncp:NODE:HANDLE, an NNCP node whose exec handle runs fspl queue-receive',
      },
      { long: 'ssh', kind: 'string', value: 'COMMAND', describe: 'The ssh command and its options, words split at spaces (default: ssh)' },
      {
        long: 'remote-fspl',
        kind: 'string',
        value: 'PATH',
        describe:
          "This fspl on the remote host: the receiver checks each sealed packet's CRC-32 with it (without it, only the length; the receiver needs sh, coreutils and flock, no fspl)",
      },
      {
        long: 'nncp-cfg',
        kind: 'string',
        value: 'PATH',
        describe:
          "With --to nncp: this node's NNCP config (default: $NNCPCFG, else /etc/nncp.hjson); given to nncp-exec as -cfg and as NNCPCFG, which NNCP's tools take over -cfg",
      },
      {
        long: 'watch',
        kind: 'boolean',
        describe: 'Keep running: send packets as they arrive, retry with back-off while the host is unreachable; SIGTERM or SIGINT stops',
      },
      {
        long: 'poll-interval',
        kind: 'string',
        value: 'SECONDS',
        describe: 'With --watch: look for new packets every SECONDS instead of using file system events',
      },
      { long: 'no-progress', kind: 'boolean', describe: 'No status line on stderr (it is shown only when stderr is a terminal)' },
      {
        long: 'status',
        kind: 'boolean',
        describe:
          'Send nothing: say what waits in the outbox (how many, the lowest and highest numbers), whether a sender runs now, since when it fails and why, and the last packet sent',
      },
      { ...json, describe: 'Print a JSON summary on stdout at the end (sent, duplicates, connections, waiting, next, error); with --status, the status' },
    ],
    positionals: [],
    params: false,
  },
  {
    name: 'queue-retry',
    usage: 'queue-retry -q FAILED --to QUEUE [-s SEQFILE] [-j ID]...',
    describe: 'Extension: put the jobs of a failed-jobs queue (queue-process --failed-to) back into a queue, each exactly once, in order, with new numbers',
    options: [
      { ...queuedir, value: 'FAILED', what: 'the failed-jobs queue', describe: 'The failed-jobs queue (queue-process --failed-to DIR)' },
      { long: 'to', kind: 'string', required: true, value: 'QUEUE', what: 'the queue to put the jobs back into', describe: 'The queue the jobs go back into' },
      { ...job, required: false, array: true, describe: 'Put back only the job with this number (in FAILED); may be repeated (default: every job)' },
      {
        ...seqfile,
        required: false,
        describe:
          "The sequence file of QUEUE's sender (prepare -s FILE): the new numbers are taken from it, never colliding with the sender's (default: QUEUE/writeseq, for a queue nothing else numbers packets for)",
      },
    ],
    positionals: [],
    params: false,
  },
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
  { name: 'show-license', usage: 'show-license', describe: 'Print the copyright and license', options: [], positionals: [], params: false },
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
    describe: 'Extension: print the signature of the signed packet on stdin, armored as ssh-keygen -Y verify reads it (-s); --data: the bytes it signs',
    options: [{ long: 'data', kind: 'boolean', describe: 'Print the exact bytes the signature signs instead (for ssh-keygen -Y verify on stdin)' }],
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
        describe: 'Extension: shell command ($SHELL -c) that turns stdin into the packet, e.g. zcat (as queue-process -d does for a stored job file)',
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
