/**
 * The grammar of fspl's subcommands that run and move queues (queue-process, queue-status,
 * queue-send, queue-receive, queue-retry): the longest of spec.ts's, each its own constant, in
 * spec.ts's COMMANDS in the reference's order.
 */
import type { CommandSpec } from './grammar.js';
import {
  allowedSigners,
  decoder,
  failureHandling,
  job,
  jobsAcross,
  json,
  maxHeaderSize,
  outputTo,
  processCommon,
  queuedir,
  seqfile,
  verifyDecoder,
} from './spec-options.js';

const RECEIVE_DESCRIBE =
  'Extension: store the framed packets on stdin (from queue-send --to ' +
  'nncp:, as an NNCP exec handle) in a queue, each exactly once, in ' +
  'whatever order they come';

/** `fspl queue-process`. */
export const QUEUE_PROCESS = {
  name: 'queue-process',
  usage:
    'queue-process {-q DIR... | --queues-in PARENT...} ' +
    '[--jobs N] [OPTIONS] [--watch [--poll-interval SECONDS] ' +
    '[--listen [HOST:]PORT]] COMMAND [-- PARAMS...]',
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
      describe:
        'Extension: serve every queue directory directly under PARENT (with ' +
        '--watch, also those made later); may be repeated',
    },
    jobsAcross,
    decoder,
    verifyDecoder,
    maxHeaderSize,
    { long: 'maxjobs', short: 'n', kind: 'string', value: 'N', describe: 'Stop after this many jobs' },
    { long: 'never-delete', kind: 'boolean', describe: 'Never delete a job file, whatever happens' },
    {
      long: 'order-by',
      kind: 'string',
      value: 'ORDER',
      default: 'Sequence',
      choices: ['Sequence', 'Timestamp'],
      describe: 'Processing order',
    },
    {
      long: 'on-error',
      kind: 'string',
      value: 'ACTION',
      default: 'Retry',
      choices: ['Retry', 'Delete', 'Leave'],
      describe: 'What to do when a job fails',
    },
    ...failureHandling,
    outputTo,
    ...processCommon,
    {
      long: 'watch',
      kind: 'boolean',
      describe:
        'Extension: keep running and process new jobs as they arrive; SIGTERM ' +
        'or SIGINT stops after the current job, a second one stops it',
    },
    {
      long: 'poll-interval',
      kind: 'string',
      value: 'SECONDS',
      describe:
        'Extension, with --watch: look for new jobs every SECONDS (e.g. 0.5) ' +
        'instead of using file system events (NFS, FUSE)',
    },
    {
      long: 'listen',
      kind: 'string',
      value: '[HOST:]PORT',
      describe:
        'Extension, with --watch: serve a live, read-only page of the queues ' +
        'and /metrics for Prometheus at HOST:PORT (HOST 127.0.0.1 unless given; ' +
        'PORT 0: any free one; the address is logged)',
    },
    {
      long: 'allow-host',
      kind: 'string',
      array: true,
      value: 'NAME',
      describe:
        'Extension, with --listen: a name (or address) the page answers to ' +
        'besides its address, localhost and 127.0.0.1/[::1]; repeat per name',
    },
    {
      long: 'no-progress',
      kind: 'boolean',
      describe: 'Extension: no progress line on stderr (it is shown only when stderr is a terminal)',
    },
    {
      long: 'verify',
      kind: 'boolean',
      describe:
        "Extension: read a sealed job's payload once to check its CRC-32 before " +
        'running the command (its length is always checked)',
    },
    allowedSigners,
  ],
  positionals: ['command'],
  positionalHelp: { command: 'the command to run for each job (its arguments go after --)' },
  params: true,
} as const satisfies CommandSpec;

/** `fspl queue-status`. */
export const QUEUE_STATUS = {
  name: 'queue-status',
  usage:
    'queue-status {-q DIR | --queues-in PARENT...} [-d DECODER] ' +
    '[--max-header-size BYTES] [--allowed-signers FILE] [--json]',
  describe:
    'Extension: diagnose a queue (next job, gaps, duplicates, unreadable, ' +
    'refused or stray files, lock); exit 3 if it is stuck',
  options: [
    { ...queuedir, required: false },
    {
      long: 'queues-in',
      kind: 'string',
      array: true,
      value: 'PARENT',
      describe:
        'Diagnose every queue directly under PARENT, in name order (with --json, ' +
        'one line each: JSON Lines); exit 3 if any is stuck; may be repeated',
    },
    decoder,
    maxHeaderSize,
    allowedSigners,
    json,
  ],
  positionals: [],
  params: false,
} as const satisfies CommandSpec;

/** `fspl queue-receive`. */
export const QUEUE_RECEIVE = {
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
        'Extension: take packets only from this NNCP node (its id, or its name ' +
        'in the NNCP config: $NNCPCFG, else /etc/nncp.hjson), as NNCP_SENDER ' +
        'says; may be repeated. Refused, nothing stored, when NNCP_SENDER is ' +
        'another node or unset',
    },
  ],
  positionals: [],
  params: false,
} as const satisfies CommandSpec;

/** `fspl queue-send`. */
export const QUEUE_SEND = {
  name: 'queue-send',
  usage:
    'queue-send -q OUTBOX --to ssh:HOST:QUEUE|nncp:NODE:HANDLE [--ssh ' +
    'COMMAND] [--remote-fspl PATH] [--watch [--poll-interval SECONDS]] ' +
    '[--json] | fspl queue-send -q OUTBOX --status [--json]',
  describe:
    'Extension: send the packets of a local queue (an outbox) to a queue on ' +
    'another host over ssh (or through NNCP), in order, many at once, each ' +
    'exactly once; retried after an outage',
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
        'Where to send: ssh:HOST:QUEUE, HOST as ssh takes it (user@host, an ' +
        'alias), QUEUE the queue directory there; or nncp:NODE:HANDLE, an NNCP ' +
        'node whose exec handle runs fspl queue-receive',
    },
    {
      long: 'ssh',
      kind: 'string',
      value: 'COMMAND',
      describe: 'The ssh command and its options, words split at spaces (default: ssh)',
    },
    {
      long: 'remote-fspl',
      kind: 'string',
      value: 'PATH',
      describe:
        "This fspl on the remote host: the receiver checks each sealed packet's " +
        'CRC-32 with it (without it, only the length; the receiver needs sh, ' +
        'coreutils and flock, no fspl)',
    },
    {
      long: 'nncp-cfg',
      kind: 'string',
      value: 'PATH',
      describe:
        "With --to nncp: this node's NNCP config (default: $NNCPCFG, else " +
        '/etc/nncp.hjson); given to nncp-exec as -cfg and as NNCPCFG, which ' +
        "NNCP's tools take over -cfg",
    },
    {
      long: 'watch',
      kind: 'boolean',
      describe:
        'Keep running: send packets as they arrive, retry with back-off while ' +
        'the host is unreachable; SIGTERM or SIGINT stops',
    },
    {
      long: 'poll-interval',
      kind: 'string',
      value: 'SECONDS',
      describe: 'With --watch: look for new packets every SECONDS instead of using file system events',
    },
    {
      long: 'no-progress',
      kind: 'boolean',
      describe: 'No status line on stderr (it is shown only when stderr is a terminal)',
    },
    {
      long: 'status',
      kind: 'boolean',
      describe:
        'Send nothing: say what waits in the outbox (how many, the lowest and ' +
        'highest numbers), whether a sender runs now, since when it fails and ' +
        'why, and the last packet sent',
    },
    {
      ...json,
      describe:
        'Print a JSON summary on stdout at the end (sent, duplicates, ' +
        'connections, waiting, next, error); with --status, the status',
    },
  ],
  positionals: [],
  params: false,
} as const satisfies CommandSpec;

/** `fspl queue-retry`. */
export const QUEUE_RETRY = {
  name: 'queue-retry',
  usage: 'queue-retry -q FAILED --to QUEUE [-s SEQFILE] [-j ID]...',
  describe:
    'Extension: put the jobs of a failed-jobs queue (queue-process --failed-to) ' +
    'back into a queue, each exactly once, in order, with new numbers',
  options: [
    {
      ...queuedir,
      value: 'FAILED',
      what: 'the failed-jobs queue',
      describe: 'The failed-jobs queue (queue-process --failed-to DIR)',
    },
    {
      long: 'to',
      kind: 'string',
      required: true,
      value: 'QUEUE',
      what: 'the queue to put the jobs back into',
      describe: 'The queue the jobs go back into',
    },
    {
      ...job,
      required: false,
      array: true,
      describe: 'Put back only the job with this number (in FAILED); may be repeated (default: every job)',
    },
    {
      ...seqfile,
      required: false,
      describe:
        "The sequence file of QUEUE's sender (prepare -s FILE): the new numbers " +
        "are taken from it, never colliding with the sender's (default: " +
        'QUEUE/writeseq, for a queue nothing else numbers packets for)',
    },
  ],
  positionals: [],
  params: false,
} as const satisfies CommandSpec;
