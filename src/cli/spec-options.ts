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
    "Extension, with -d: spool the decoder's whole output to $TMPDIR and start the command only once the decoder has exited 0 (a failing decoder fails the job, nothing run); default with FSPL_VERIFY_DECODER=1",
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
    'Extension: read no job header whose metadata is longer than BYTES (K or M suffix allowed; default 8M, or FSPL_MAX_HEADER_SIZE); a longer one is skipped with a warning, and its number waits as a missing job would',
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
    'Extension: take only packets signed (prepare --sign) by a key that FILE, in OpenSSH allowed_signers format, allows for namespace fspl now; default $FSPL_ALLOWED_SIGNERS',
} as const satisfies OptionSpec;
export const signing = [
  {
    long: 'sign',
    kind: 'string',
    value: 'KEY',
    describe: 'Extension: sign the packet (and seal it) with this OpenSSH private key; one with a passphrase is used through ssh-agent (SSH_AUTH_SOCK)',
  },
  {
    long: 'sign-command',
    kind: 'string',
    value: 'CMD',
    describe:
      "Extension: sign the packet (and seal it) with CMD, run by $SHELL -c with the data to sign on stdin, printing an armored SSH signature of namespace fspl (as 'ssh-keygen -Y sign -f KEY -n fspl')",
  },
] as const satisfies readonly OptionSpec[];
export const processCommon = [
  { long: 'allow-job-params', kind: 'boolean', describe: "Append the job's own parameters after the command's" },
  { long: 'ignore-payload', kind: 'boolean', describe: 'Do not feed the payload to the command' },
  {
    long: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    describe: "Kill the command's process group with SIGKILL after this many seconds, fractions allowed (counts as a failure)",
  },
  {
    long: 'stop-timeout',
    kind: 'string',
    value: 'SECONDS',
    describe: 'Extension: on SIGINT or SIGTERM, let the running job go on at most this many seconds, then stop it as a second signal does (default: no limit)',
  },
] as const satisfies readonly OptionSpec[];
