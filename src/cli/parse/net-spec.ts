/**
 * The grammar of `fspl net` as data (spec.ts's for the rest of fspl): its subcommands, their
 * positionals and options. command-line.ts reads `fspl net` lines by it; its help comes from it too.
 */
import { type ArgsOf, type CommandSpec, type Invocation, invocationOf, type OptionSpec } from './grammar.js';

/** `fspl net <command> NET ...`: the subcommands of `fspl net`, named without the `net`. */
export const NET_USAGE =
  'fspl net <command> NET ...\n\nPetri nets of queues: places are queues, ' +
  'transitions are commands, tokens are packets.';
/** What `fspl --help` says of `fspl net`. */
export const NET_SUMMARY =
  'Extension: Petri nets of queues (places are queues, transitions are ' +
  'commands); fspl net --help, or fspl help net, lists its commands';
/** The usage error of `fspl net` without a subcommand. */
export const NET_DEMAND =
  'give a net command: check, init, put, run, simulate, status, dot, ' +
  'serve, retry, pause, resume, ls, show, set-aside or receive';

const netHost = {
  long: 'host',
  kind: 'string',
  describe: 'On a net that spans hosts: which host this is',
} as const satisfies OptionSpec;
const netWorkers = {
  long: 'workers',
  short: 'w',
  kind: 'string',
  describe: 'Workers shared by all transitions (default: the number of CPUs)',
} as const satisfies OptionSpec;
const netJson = { long: 'json', kind: 'boolean', describe: 'Print JSON (docs/json.md)' } as const satisfies OptionSpec;
const NET_POSITIONALS = {
  net: 'The net file (YAML)',
  place: 'The place, by its name in the net file',
  transition: 'The transition',
  'error-place': 'The error place to take tokens from (default: every error place)',
} as const;

/** One `fspl net` subcommand: its positionals are described in help, its usage line is yargs' own. */
function netCommand<
  const N extends string,
  const P extends readonly string[],
  const O extends readonly OptionSpec[],
  const Q extends readonly string[] = [],
>(name: N, positionals: P, describe: string, options: O, params = false, given?: Q) {
  const optionalPositionals = given ?? ([] as const);
  const usage = `net ${name}${netPositionals({ positionals, optionalPositionals })}`;
  return {
    name,
    usage,
    describe,
    options,
    positionals,
    optionalPositionals,
    positionalHelp: NET_POSITIONALS,
    params,
  } satisfies CommandSpec;
}

/** The positionals of a net command as its usage line (and yargs' command) writes them: <required> [optional]. */
export function netPositionals(spec: Pick<CommandSpec, 'positionals' | 'optionalPositionals'>): string {
  return (
    spec.positionals.map((p) => ` <${p}>`).join('') + (spec.optionalPositionals ?? []).map((p) => ` [${p}]`).join('')
  );
}

export const NET_COMMANDS = [
  netCommand(
    'check',
    ['net'],
    'Validate a net file (every problem in one run) and warn where a mistake ' +
      'is likely: races, typos in place names, unused or unreachable parts; ' +
      '--host: also try the way to every place that host sends to over ssh',
    [netHost],
  ),
  netCommand('init', ['net'], "Create every place's queue (existing ones are kept); --host: only that host's places", [
    netHost,
    {
      long: 'permissions',
      kind: 'boolean',
      describe: 'Set owners and modes (as root): a place is owned by its reader, its writers are its group',
    },
  ]),
  netCommand(
    'put',
    ['net', 'place'],
    'Put one token into a place; its payload is read from stdin (or -i FILE); -- PARAMS... become its params',
    [
      { long: 'key', short: 'k', kind: 'string', describe: 'The correlation key (default: a new UUID)' },
      { long: 'input', short: 'i', kind: 'string', describe: 'Read the payload from this file instead of stdin' },
      {
        long: 'sign',
        kind: 'string',
        describe: 'Sign the token with this OpenSSH private key (no passphrase), for a place that requires signatures',
      },
      // yargs reads --no-wait as --wait negated (as --no-progress of run): the option is `wait`.
      {
        long: 'wait',
        kind: 'boolean',
        default: true,
        describe: 'Wait while the place is full (--no-wait: fail at once, exit 3)',
      },
    ],
    true,
  ),
  netCommand(
    'run',
    ['net'],
    'Run the transitions, firing as tokens arrive, until SIGTERM/SIGINT (or, with --drain, until nothing can fire)',
    [
      netHost,
      {
        long: 'drain',
        kind: 'boolean',
        describe: 'Exit once nothing runs and nothing can fire: 0, or 3 listing the tokens left',
      },
      {
        long: 'poll-interval',
        kind: 'string',
        describe:
          'Look for new tokens every this many seconds instead of using file ' +
          'system events (NFS, SSHFS, synced folders)',
      },
      netWorkers,
      {
        long: 'grace',
        kind: 'string',
        describe: 'Seconds running firings get to finish on SIGTERM/SIGINT (default 5)',
      },
      {
        long: 'stop-timeout',
        kind: 'string',
        describe:
          'The same as --grace: on SIGTERM/SIGINT, running firings finish within ' +
          'this many seconds or are abandoned (their tokens stay); then exit 0',
      },
      {
        long: 'progress',
        kind: 'boolean',
        default: true,
        describe: 'Show a status line on stderr when it is a terminal (--no-progress: never)',
      },
    ],
  ),
  netCommand(
    'receive',
    ['net', 'place'],
    'Store the tokens framed on stdin in a place of this host, each exactly ' +
      'once, in whatever order they come: the NNCP exec handle of a host ' +
      'reached through NNCP (hosts: { NAME: { nncp: ... } }); NNCP appends ' +
      "the place's name. Only a place another host feeds, and with " +
      "NNCP_SENDER set, only from that host's NNCP node (or this host's " +
      'nncp.from); else refused, nothing stored',
    [netHost],
  ),
  netCommand('status', ['net'], 'Tokens per place, firings per transition, what is stuck and why (exit 3 when stuck)', [
    netJson,
    netHost,
  ]),
  netCommand(
    'simulate',
    ['net'],
    'Run the scheduler in virtual time (no command runs): makespan, peak of ' +
      'each place, busy share of each transition, lower bound',
    [
      {
        long: 'tokens',
        short: 'n',
        kind: 'string',
        required: true,
        value: 'N',
        what: 'how many tokens to put into each source place',
        describe: 'Tokens put into each source place',
      },
      netWorkers,
      {
        long: 'service',
        short: 's',
        kind: 'string',
        array: true,
        describe: 'TRANSITION=MEAN[±JITTER%], MEAN with a unit (40ms, 2s); repeat per transition (default 100ms)',
      },
      { long: 'seed', kind: 'string', describe: 'Seed of the random service times (default 1)' },
      { long: 'json', kind: 'boolean', describe: 'Print the report as JSON' },
    ],
  ),
  netCommand('dot', ['net'], 'Print the net as a Graphviz drawing (DOT, or SVG with --svg)', [
    { long: 'svg', kind: 'boolean', describe: 'Print SVG, drawn in-process (no Graphviz needed)' },
    {
      long: 'live',
      kind: 'boolean',
      describe:
        'Colour it by the current state: token counts, running transitions, ' +
        'stuck places and failing transitions in red',
    },
  ]),
  netCommand(
    'retry',
    ['net'],
    'Put error tokens back into the places they were taken from, without ' +
      'their ERROR_* variables and with RETRIED counted, each exactly once',
    [
      {
        long: 'key',
        short: 'k',
        kind: 'string',
        array: true,
        describe: 'Only the tokens with this key (repeat for more)',
      },
      { long: 'transition', short: 't', kind: 'string', describe: 'Only the tokens of this failed transition' },
      { long: 'all', kind: 'boolean', describe: 'Every error token' },
      {
        long: 'to',
        kind: 'string',
        describe: 'Put them into this place (a token whose transition is gone, or that does not say its place)',
      },
      { long: 'dry-run', kind: 'boolean', describe: 'Say what would move where; move nothing' },
      {
        long: 'set-aside',
        kind: 'boolean',
        describe: 'Bring back tokens set aside (net set-aside) instead, by --key, --seq or --all',
      },
      { long: 'seq', kind: 'string', describe: 'With --set-aside: the token that had this number in its place' },
      netHost,
    ],
    false,
    ['error-place'],
  ),
  netCommand(
    'pause',
    ['net', 'transition'],
    'Start no new firing of a transition (running ones finish) until resumed; kept across restarts',
    [
      { long: 'reason', kind: 'string', describe: 'Why, as status shows it' },
      {
        long: 'kill',
        kind: 'boolean',
        describe: 'Stop its running firings too (their tokens stay), instead of letting them finish',
      },
      netHost,
    ],
  ),
  netCommand('resume', ['net', 'transition'], 'Let a paused transition fire again', [netHost]),
  netCommand(
    'ls',
    ['net', 'place'],
    'List the tokens of a place in the order they will be taken: number, ' +
      'key, age, size, params, and for error tokens why',
    [{ long: 'json', kind: 'boolean', describe: 'Print one JSON object per token (JSON lines)' }, netHost],
  ),
  netCommand(
    'show',
    ['net', 'place'],
    'Show one token: its variables, where it came from (an error token: its log), or its payload',
    [
      { long: 'key', short: 'k', kind: 'string', describe: 'The token with this key' },
      { long: 'seq', kind: 'string', describe: 'The token with this number' },
      { long: 'payload', kind: 'boolean', describe: 'Write its payload (only) to stdout' },
      netHost,
    ],
  ),
  netCommand(
    'set-aside',
    ['net', 'place'],
    'Take a poison token out of its place into STATE/set-aside, losing ' +
      'nothing (a sequence place gets a NOP in its number)',
    [
      { long: 'key', short: 'k', kind: 'string', describe: 'The token with this key' },
      { long: 'seq', kind: 'string', describe: 'The token with this number' },
      { long: 'reason', kind: 'string', describe: 'Why, kept with the token' },
      netHost,
    ],
  ),
  netCommand(
    'serve',
    ['net'],
    'Serve a read-only web page that shows the net live (and /metrics for Prometheus) until SIGTERM/SIGINT',
    [
      { long: 'port', short: 'p', kind: 'string', default: '8484', describe: 'TCP port (0: any free one)' },
      {
        long: 'host',
        kind: 'string',
        default: '127.0.0.1',
        describe: 'Address to listen on; anything but loopback shows the net to the network',
      },
      {
        long: 'net-host',
        kind: 'string',
        describe: 'On a net that spans hosts: which host this is (its part is shown, as by net status --host)',
      },
      {
        long: 'allow-host',
        kind: 'string',
        array: true,
        describe:
          'A name (or address) the page answers to besides its address, localhost ' +
          'and 127.0.0.1/[::1]; repeat per name; needed with --host 0.0.0.0 for ' +
          'the names browsers use',
      },
      {
        long: 'max-streams',
        kind: 'string',
        default: '64',
        describe: 'Live-update streams open at once; more are refused with 503',
      },
    ],
  ),
] as const satisfies readonly CommandSpec[];

/** A net subcommand's grammar, and its name. */
export type NetCommand = (typeof NET_COMMANDS)[number];
export type NetCommandName = NetCommand['name'];
/** A net subcommand's parsed arguments, typed from its grammar. */
export type NetArgs<N extends NetCommandName> = ArgsOf<Extract<NetCommand, { name: N }>>;

/** A net subcommand's invocation, typed from its grammar (spec.ts's invocationOf). */
export function netInvocation<N extends NetCommandName>(inv: Invocation, name: N): Invocation<NetArgs<N>> {
  return invocationOf(inv, NET_COMMANDS.find((c) => c.name === name)!);
}
