/**
 * The options that several fspl subcommands share, as data (spec.ts lists the subcommands): the
 * seqfile and queue, the decoder, signatures, and what the process commands have in common.
 */
import type { OptionSpec } from './grammar.js';

export const seqfile = {
  long: 'seqfile',
  short: 's',
  kind: 'string',
  required: true,
  value: 'FILE',
  what: "the sender's sequence file",
  describe: 'Sender sequence file (created holding 1 if missing); "-" for none, giving sequence 1',
} as const satisfies OptionSpec;
export const queuedir = {
  long: 'queuedir',
  short: 'q',
  kind: 'string',
  required: true,
  value: 'DIR',
  what: 'the queue directory',
  describe: 'Queue directory',
} as const satisfies OptionSpec;
export const decoder = {
  long: 'decoder',
  short: 'd',
  kind: 'string',
  value: 'DECODER',
  describe: 'Shell command ($SHELL -c) that turns a stored job file into a packet, e.g. zcat',
} as const satisfies OptionSpec;
export const verifyDecoder = {
  long: 'verify-decoder',
  kind: 'boolean',
  describe:
    "Extension, with -d: spool the decoder's whole output to $TMPDIR and " +
    'start the command only once the decoder has exited 0 (a failing ' +
    'decoder fails the job, nothing run); default with ' +
    'FSPL_VERIFY_DECODER=1',
} as const satisfies OptionSpec;
export const job = {
  long: 'job',
  short: 'j',
  kind: 'string',
  required: true,
  value: 'ID',
  what: "the job's sequence number",
  describe: 'Sequence number of the job',
} as const satisfies OptionSpec;
export const maxHeaderSize = {
  long: 'max-header-size',
  kind: 'string',
  value: 'BYTES',
  describe:
    'Extension: read no job header whose metadata is longer than BYTES (K or ' +
    'M suffix allowed; default 8M, or FSPL_MAX_HEADER_SIZE); a longer one ' +
    'is skipped with a warning, and its number waits as a missing job would',
} as const satisfies OptionSpec;
export const json = {
  long: 'json',
  kind: 'boolean',
  describe: 'Print JSON instead of text (an extension: the reference has no --json; see docs/json.md)',
} as const satisfies OptionSpec;
export const allowedSigners = {
  long: 'allowed-signers',
  kind: 'string',
  value: 'FILE',
  describe:
    'Extension: take only packets signed (prepare --sign) by a key that ' +
    'FILE, in OpenSSH allowed_signers format, allows for namespace fspl ' +
    'now; default $FSPL_ALLOWED_SIGNERS',
} as const satisfies OptionSpec;
export const signing = [
  {
    long: 'sign',
    kind: 'string',
    value: 'KEY',
    describe:
      'Extension: sign the packet (and seal it) with this OpenSSH private ' +
      'key; one with a passphrase is used through ssh-agent (SSH_AUTH_SOCK)',
  },
  {
    long: 'sign-command',
    kind: 'string',
    value: 'CMD',
    describe:
      'Extension: sign the packet (and seal it) with CMD, run by $SHELL -c ' +
      'with the data to sign on stdin, printing an armored SSH signature of ' +
      "namespace fspl (as 'ssh-keygen -Y sign -f KEY -n fspl')",
  },
] as const satisfies readonly OptionSpec[];
export const processCommon = [
  { long: 'allow-job-params', kind: 'boolean', describe: "Append the job's own parameters after the command's" },
  { long: 'ignore-payload', kind: 'boolean', describe: 'Do not feed the payload to the command' },
  {
    long: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    describe:
      "Kill the command's process group with SIGKILL after this many seconds, fractions allowed (counts as a failure)",
  },
  {
    long: 'stop-timeout',
    kind: 'string',
    value: 'SECONDS',
    describe:
      'Extension: on SIGINT or SIGTERM, let the running job go on at most this ' +
      'many seconds, then stop it as a second signal does (default: no limit)',
  },
] as const satisfies readonly OptionSpec[];
/** prepare's header keys that the reference ignores: retries and not-before. */
export const prepareExtensions = [
  {
    long: 'retries',
    kind: 'string',
    value: 'N',
    describe:
      'Extension: let a processor try this job at most N more times when it ' +
      'fails (a header key the reference ignores; queue-process --retries ' +
      'caps it, and without that option it means nothing)',
  },
  {
    long: 'not-before',
    kind: 'string',
    value: 'TIME',
    describe:
      'Extension: queue-process runs this job, and in sequence order every ' +
      'job after it, no earlier than TIME: RFC 3339 with its offset ' +
      '(2026-12-01T08:00:00Z) or +DURATION from now (+90s, +15m, +2h, +1d, ' +
      '+1h30m); a header key the reference ignores',
  },
] as const satisfies readonly OptionSpec[];
/** queue-process's retries, failed-jobs queue and finish hook. */
export const failureHandling = [
  {
    long: 'retries',
    kind: 'string',
    value: 'N',
    describe:
      'Extension: try a failing job again up to N more times (fewer if its ' +
      'packet asks for fewer: prepare --retries), the queue waiting ' +
      'meanwhile; the tries are counted in the queue directory, the job sees ' +
      'FSPL_JOB_ATTEMPT',
  },
  {
    long: 'retry-delay',
    kind: 'string',
    value: 'SECONDS',
    describe:
      'Extension, with --retries: wait this long before the first retry, doubling for each one after (default 10)',
  },
  {
    long: 'retry-max-delay',
    kind: 'string',
    value: 'SECONDS',
    describe: 'Extension, with --retries: never wait longer than this between tries (default 3600)',
  },
  {
    long: 'failed-to',
    kind: 'string',
    value: 'DIR',
    describe:
      'Extension: move a job that failed its last try into the queue DIR ' +
      '(made if missing; queues may share it), with the facts of its failure, ' +
      'and go on with the next job',
  },
  {
    long: 'on-finish',
    kind: 'string',
    value: 'CMD',
    describe:
      'Extension: after each job that ran, once its record is durable, run ' +
      "CMD through $SHELL -c with the job's FSPL_* variables and " +
      'FSPL_JOB_OUTCOME (success, failure, timeout, retry, moved), ' +
      'FSPL_JOB_EXIT_STATUS, FSPL_JOB_DURATION_MS, FSPL_JOB_ATTEMPT; one at a ' +
      "time, the queue waiting; its failure is logged, never the job's",
  },
  {
    long: 'on-finish-timeout',
    kind: 'string',
    value: 'SECONDS',
    describe: 'Extension, with --on-finish: kill the hook after this long (default 30)',
  },
] as const satisfies readonly OptionSpec[];
export const outputTo = {
  long: 'output-to',
  kind: 'string',
  value: 'WHERE',
  default: 'PassBoth',
  choices: ['PassBoth', 'SaveBoth'],
  describe: "Where the command's stdout and stderr go (SaveBoth: jobs/FILE.out)",
} as const satisfies OptionSpec;
export const jobsAcross = {
  long: 'jobs',
  kind: 'string',
  value: 'N',
  describe:
    'Extension, with several queues: run at most N jobs at once across them ' +
    '(default 1); jobs of one queue never overlap',
} as const satisfies OptionSpec;
