/**
 * `fspl net ...`: argument parsing only; everything is done by the library's Net (src/net).
 * Exit statuses: 0 success, 1 runtime error, 2 usage error or an invalid net file, 3 stuck
 * (`status`) or tokens left that can never fire (`run --drain`).
 */
import os from 'node:os';
import yargs, { type Argv } from 'yargs';
import { Net, NetFileError, createLogger } from '../index.js';
import { describeRemoteLeftover, dotToSvg, hostOf, hostView, liveDotState, netStatusJson, parseService, serveNet, simulate, type ServiceTime } from '../net-tools.js';
import { NetProgressLine } from './net-progress.js';
import { formatNetStatus } from './net-text.js';
import { formatSimulation } from './net-simulate-text.js';
import { checkLogLevel, reportError, writeOut } from './output.js';

const NET_POSITIONAL = { describe: 'The net file (YAML)', type: 'string' } as const;
const HOST_OPTION = { type: 'string', describe: 'On a net that spans hosts: which host this is' } as const;

function load(file: string): Net {
  return Net.load(file);
}

function seconds(v: unknown, what: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new CliUsage(`invalid ${what} '${String(v)}': give a number of seconds above 0`);
  return n;
}

class CliUsage extends Error {}

export async function runNet(argv: string[]): Promise<number> {
  const dashdash = argv.indexOf('--');
  const params = dashdash >= 0 ? argv.slice(dashdash + 1) : [];
  const args = dashdash >= 0 ? argv.slice(0, dashdash) : argv;
  let status = 0;
  let failure: unknown;
  const act = (fn: (a: Record<string, unknown>) => Promise<number> | number) => async (a: Record<string, unknown>) => {
    try {
      status = await fn(a);
    } catch (err) {
      failure = err;
    }
  };
  let usage: string | undefined;
  const y: Argv = yargs(args)
    .scriptName('fspl net')
    .usage('fspl net <command> NET ...\n\nPetri nets of queues: places are queues, transitions are commands, tokens are packets.')
    .option('log-level', { alias: 'l', type: 'string', default: 'info', describe: 'Log detail on stderr: trace, debug, info, warn or error' })
    .command(
      'check <net>',
      'Validate a net file and warn about races, sources, sinks and unreachable parts; --host: also try the way to every place that host sends to over ssh',
      (b) => b.positional('net', NET_POSITIONAL).option('host', HOST_OPTION),
      act((a) => check(String(a.net), hostArg(a))),
    )
    .command(
      'init <net>',
      "Create every place's queue (existing ones are kept); --host: only that host's places",
      (b) =>
        b
          .positional('net', NET_POSITIONAL)
          .option('host', HOST_OPTION)
          .option('permissions', { type: 'boolean', describe: 'Set owners and modes (as root): a place is owned by its reader, its writers are its group' }),
      act((a) => {
        const net = load(String(a.net));
        const host = hostArg(a);
        const made = host === undefined ? { places: net.init({ permissions: !!a.permissions }), outboxes: [] } : net.initHost(host, { permissions: !!a.permissions });
        for (const p of made.places) writeOut(`created place ${p}\n`);
        for (const p of made.outboxes) writeOut(`created outbox ${p} (its tokens leave for host ${hostOf(net.model.places.get(p)!)})\n`);
        return 0;
      }),
    )
    .command(
      'put <net> <place>',
      'Put one token into a place; its payload is read from stdin (or -i FILE); -- PARAMS... become its params',
      (b) =>
        b
          .positional('net', NET_POSITIONAL)
          .positional('place', { type: 'string', describe: 'The place' })
          .option('key', { alias: 'k', type: 'string', describe: 'The correlation key (default: a new UUID)' })
          .option('input', { alias: 'i', type: 'string', describe: 'Read the payload from this file instead of stdin' })
          .option('no-wait', { type: 'boolean', describe: 'Fail at once (exit 3) instead of waiting when the place is full' }),
      act(async (a) => {
        const net = load(String(a.net));
        const payload = a.input !== undefined ? { path: String(a.input) } : process.stdin;
        const opts = { key: a.key === undefined ? undefined : String(a.key), params };
        const r = a.noWait || a['no-wait'] ? await net.tryPut(String(a.place), payload, opts) : await net.put(String(a.place), payload, opts);
        if (r === 'full') {
          process.stderr.write(`Error: place ${String(a.place)} is full\n`);
          return 3;
        }
        writeOut(`${r.place} ${r.seq} ${r.key}\n`);
        return 0;
      }),
    )
    .command(
      'run <net>',
      'Run the transitions, firing as tokens arrive, until SIGTERM/SIGINT (or, with --drain, until nothing can fire)',
      (b) =>
        b
          .positional('net', NET_POSITIONAL)
          .option('host', HOST_OPTION)
          .option('drain', { type: 'boolean', describe: 'Exit once nothing runs and nothing can fire: 0, or 3 listing the tokens left' })
          .option('poll-interval', { type: 'string', describe: 'Look for new tokens every this many seconds instead of using file system events (NFS, SSHFS, synced folders)' })
          .option('workers', { alias: 'w', type: 'string', describe: 'Workers shared by all transitions (default: the number of CPUs)' })
          .option('grace', { type: 'string', describe: 'Seconds running firings get to finish on SIGTERM/SIGINT (default 5)' })
          .option('progress', { type: 'boolean', default: true, describe: 'Show a status line on stderr when it is a terminal (--no-progress: never)' }),
      act((a) => run(a)),
    )
    .command(
      'status <net>',
      'Tokens per place, firings per transition, what is stuck and why (exit 3 when stuck)',
      (b) => b.positional('net', NET_POSITIONAL).option('json', { type: 'boolean', describe: 'Print JSON (docs/json.md)' }).option('host', HOST_OPTION),
      act(async (a) => {
        const report = await load(String(a.net)).status({ host: hostArg(a) });
        writeOut(a.json ? `${JSON.stringify(netStatusJson(report), null, 2)}\n` : formatNetStatus(report));
        return report.state === 'stuck' ? 3 : 0;
      }),
    )
    .command(
      'simulate <net>',
      'Run the scheduler in virtual time (no command runs): makespan, peak of each place, busy share of each transition, lower bound',
      (b) =>
        b
          .positional('net', NET_POSITIONAL)
          .option('tokens', { alias: 'n', type: 'string', demandOption: true, describe: 'Tokens put into each source place' })
          .option('workers', { alias: 'w', type: 'string', describe: 'Workers shared by all transitions (default: the number of CPUs)' })
          .option('service', { alias: 's', type: 'string', array: true, describe: 'TRANSITION=MEAN[±JITTER%], MEAN with a unit (40ms, 2s); repeat per transition (default 100ms)' })
          .option('seed', { type: 'string', describe: 'Seed of the random service times (default 1)' })
          .option('json', { type: 'boolean', describe: 'Print the report as JSON' }),
      act((a) => simulateCommand(a)),
    )
    .command(
      'dot <net>',
      'Print the net as a Graphviz drawing (DOT, or SVG with --svg)',
      (b) =>
        b
          .positional('net', NET_POSITIONAL)
          .option('svg', { type: 'boolean', describe: 'Print SVG, drawn in-process (no Graphviz needed)' })
          .option('live', { type: 'boolean', describe: 'Colour it by the current state: token counts, running transitions, stuck places and failing transitions in red' }),
      act(async (a) => {
        const net = load(String(a.net));
        const dot = net.dot(a.live ? liveDotState(await net.status()) : undefined);
        writeOut(a.svg ? await dotToSvg(dot) : dot);
        return 0;
      }),
    )
    .command(
      'serve <net>',
      'Serve a read-only web page that shows the net live (and /metrics for Prometheus) until SIGTERM/SIGINT',
      (b) =>
        b
          .positional('net', NET_POSITIONAL)
          .option('port', { alias: 'p', type: 'string', default: '8484', describe: 'TCP port (0: any free one)' })
          .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on; anything but loopback shows the net to the network' })
          .option('net-host', { type: 'string', describe: 'On a net that spans hosts: which host this is (its part is shown, as by net status --host)' }),
      act((a) => serve(a)),
    )
    .demandCommand(1, 'give a net command: check, init, put, run, simulate, status, dot or serve')
    .strict()
    .help()
    .version(false)
    .wrap(Math.min(100, process.stdout.columns || 100))
    .exitProcess(false)
    .fail((msg, err) => {
      if (err) throw err;
      usage = msg;
    });
  let helpText = '';
  try {
    await y.parseAsync(args, {}, (_err, _argv, output) => {
      helpText = output;
    });
  } catch (err) {
    failure = err;
  }
  if (usage !== undefined) {
    process.stderr.write(`error: ${usage}\n\nFor more information try fspl net --help\n`);
    return 2;
  }
  if (helpText && failure === undefined && status === 0) {
    writeOut(`${helpText}\n`);
    return 0;
  }
  if (failure !== undefined) {
    if (failure instanceof CliUsage) {
      process.stderr.write(`error: ${failure.message}\n`);
      return 2;
    }
    if (failure instanceof NetFileError) {
      process.stderr.write(`${failure.message}\n`);
      return 2;
    }
    return reportError(failure);
  }
  return status;
}

/** Exit 0, or 1 when a way to another host (--host) would fail now. */
async function check(file: string, host: string | undefined): Promise<number> {
  const net = load(file);
  if (host !== undefined) hostView(net.model, host); // an unknown host is refused before anything is said to be ok
  const warnings = net.check();
  for (const w of warnings) process.stderr.write(`${file}: warning: ${w.message}\n`);
  writeOut(`${file}: ok: ${net.model.places.size} places, ${net.model.transitions.size} transitions, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}\n`);
  if (host === undefined) return 0;
  let failed = 0;
  for (const p of await net.probeHost(host)) {
    const where = `${file}: host ${host} sends ${p.place} to ${p.host}:${p.remoteDir} over ssh`;
    if (p.error !== undefined) {
      failed++;
      process.stderr.write(`${where}: ${p.error}\n`);
    } else writeOut(`${where}: ok (${p.fspl ? `seals checked there by ${p.fspl}` : 'no fspl: there, lengths checked only'})\n`);
  }
  return failed > 0 ? 1 : 0;
}

async function run(a: Record<string, unknown>): Promise<number> {
  const level = checkLevel(a);
  const net = load(String(a.net));
  const workers = a.workers === undefined ? undefined : Number(a.workers);
  if (workers !== undefined && !(Number.isInteger(workers) && workers >= 1)) throw new CliUsage(`invalid --workers '${String(a.workers)}': give a whole number of at least 1`);
  const pollInterval = seconds(a.pollInterval ?? a['poll-interval'], '--poll-interval');
  const grace = a.grace === undefined ? undefined : Number(a.grace);
  if (grace !== undefined && !(grace >= 0)) throw new CliUsage(`invalid --grace '${String(a.grace)}'`);
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const progress = process.stderr.isTTY && a.progress !== false ? new NetProgressLine(process.stderr, [...net.model.places.keys()]) : undefined;
  try {
    const summary = await net.run({
      host: hostArg(a),
      drain: !!a.drain,
      pollInterval,
      workers,
      grace,
      signal: controller.signal,
      logger: createLogger(level, progress?.sink),
      onEvent: progress && ((e) => progress.event(e)),
      onLive: progress && ((s) => progress.live(s)),
    });
    progress?.finish();
    const n = summary.leftovers.length;
    if (n > 0) {
      process.stderr.write(`${n} token${n === 1 ? '' : 's'} can never fire:\n`);
      for (const l of summary.leftovers) process.stderr.write(`  ${l.place} #${l.seq} key ${l.key}: ${l.reason}\n`);
    }
    const elsewhere = summary.elsewhere ?? [];
    const m = elsewhere.reduce((sum, x) => sum + x.count, 0);
    if (m > 0) {
      process.stderr.write(`${m} token${m === 1 ? '' : 's'} on other hosts can't come here in this drain:\n`);
      for (const x of elsewhere) process.stderr.write(`  ${describeRemoteLeftover(x)}\n`);
    }
    if (n + m > 0) return 3;
    return 0;
  } finally {
    progress?.finish();
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  }
}

async function serve(a: Record<string, unknown>): Promise<number> {
  const level = checkLevel(a);
  const port = Number(a.port);
  if (!(Number.isInteger(port) && port >= 0 && port <= 65535)) throw new CliUsage(`invalid --port '${String(a.port)}': give a number from 0 to 65535`);
  const net = load(String(a.net));
  const netHost = a.netHost ?? a['net-host'];
  const server = await serveNet(net.model, { port, host: String(a.host), netHost: netHost === undefined ? undefined : String(netHost), logger: createLogger(level) });
  writeOut(`Serving ${net.model.file ?? net.model.dir} at ${server.url} (read-only; Ctrl-C stops)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.close();
  return 0;
}

function hostArg(a: Record<string, unknown>): string | undefined {
  return a.host === undefined ? undefined : String(a.host);
}

function checkLevel(a: Record<string, unknown>) {
  return checkLogLevel(String(a.logLevel ?? a['log-level'] ?? 'info'));
}

function simulateCommand(a: Record<string, unknown>): number {
  const net = load(String(a.net));
  const whole = (v: unknown, what: string, min: number) => {
    const n = Number(v);
    if (!(Number.isSafeInteger(n) && n >= min)) throw new CliUsage(`invalid ${what} '${String(v)}': give a whole number of at least ${min}`);
    return n;
  };
  const tokens = whole(a.tokens, '--tokens', 0);
  const workers = a.workers === undefined ? os.availableParallelism() : whole(a.workers, '--workers', 1);
  const seed = a.seed === undefined ? undefined : whole(a.seed, '--seed', 0);
  const service: Record<string, ServiceTime> = {};
  for (const text of (a.service as string[] | undefined) ?? []) {
    try {
      const s = parseService(String(text));
      service[s.transition] = s.service;
    } catch (err) {
      throw new CliUsage((err as Error).message);
    }
  }
  for (const name of Object.keys(service)) if (!net.model.transitions.has(name)) throw new CliUsage(`--service names ${JSON.stringify(name)}, which is not a transition of the net`);
  const report = simulate(net.model, { tokens, workers, service, seed });
  writeOut(a.json ? `${JSON.stringify(report, null, 2)}\n` : formatSimulation(report));
  return 0;
}
