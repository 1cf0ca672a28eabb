/**
 * `fspl net ...`: the handlers of its subcommands, on arguments read by parse/command-line.ts from
 * the grammar in net-spec.ts; everything is done by the library's Net and filespooler/net.
 * Exit statuses: 0 success, 1 runtime error, 2 usage error, an invalid net file (NetFileError) or
 * a bad request (NetRequestError: a name the net does not have, in any subcommand), 3 stuck
 * (`status`) or tokens left that can never fire (`run --drain`).
 */
import os from 'node:os';
import { createLogger, Net, NetFileError, NetRequestError } from '../../index.js';
import {
  describeRemoteLeftover,
  dotToSvg,
  hostOf,
  hostView,
  liveDotState,
  netStatusJson,
  parseService,
  pauseText,
  type ServiceTime,
  serveNet,
  simulate,
} from '../../net-tools.js';
import type { Invocation } from '../parse/grammar.js';
import { type NetArgs, type NetCommandName, netInvocation } from '../parse/net-spec.js';
import { NetProgressLine } from '../text/net-progress.js';
import { formatSimulation } from '../text/net-simulate-text.js';
import { formatNetStatus } from '../text/net-text.js';
import { checkLogLevel, reportError, UsageError, writeOut } from '../text/output.js';
import { printRetry, printToken, printTokens } from './net-operate.js';

/** A usage error in a value: its message says all (no pointer to --help), exit 2. */
function badValue(message: string): UsageError {
  return new UsageError(message, false);
}

function load(file: string): Net {
  return Net.load(file);
}

function seconds(v: unknown, what: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw badValue(`invalid ${what} '${String(v)}': give a number of seconds above 0`);
  return n;
}

/** A net subcommand's invocation, typed from its grammar (net-spec.ts's NetArgs). */
type NetInvocation<N extends NetCommandName> = Invocation<NetArgs<N>>;

/** The net subcommands by name (net-spec.ts's NET_COMMANDS); each resolves to the exit status. */
type Handlers = { [N in NetCommandName]: (inv: NetInvocation<N>) => Promise<number> | number };

const handlers: Handlers = {
  check: ({ args: a }) => check(String(a.net), hostArg(a)),
  init: ({ args: a }) => {
    const net = load(String(a.net));
    const host = hostArg(a);
    const made =
      host === undefined
        ? { places: net.init({ permissions: !!a.permissions }), outboxes: [] }
        : net.initHost(host, { permissions: !!a.permissions });
    for (const p of made.places) writeOut(`created place ${p}\n`);
    for (const p of made.outboxes)
      writeOut(`created outbox ${p} (its tokens leave for host ${hostOf(net.model.places.get(p)!)})\n`);
    return 0;
  },
  put: async ({ args: a, params }) => {
    const net = load(String(a.net));
    if (a.input === undefined && process.stdin.isTTY) {
      // Waiting on a terminal looks like a hang: say what it waits for.
      process.stderr.write(
        "fspl net put: reading the token's payload from the terminal; end it " +
          'with Ctrl-D (or give -i FILE, or pipe it in)\n',
      );
    }
    const payload = a.input !== undefined ? { path: String(a.input) } : process.stdin;
    const spec = net.model.places.get(String(a.place));
    if (a.sign === undefined && (spec?.signers !== undefined || (spec?.from?.length ?? 0) > 0))
      process.stderr.write(
        `fspl net put: warning: place ${spec!.name} requires signatures: ` +
          `unsigned (no --sign KEY), this token will be set aside by the run\n`,
      );
    const opts = { key: a.key, params, sign: a.sign };
    const r =
      a.wait === false
        ? await net.tryPut(String(a.place), payload, opts)
        : await net.put(String(a.place), payload, opts);
    if (r === 'full') {
      process.stderr.write(`Error: place ${String(a.place)} is full\n`);
      return 3;
    }
    writeOut(`${r.place} ${r.seq} ${r.key}\n`);
    return 0;
  },
  run: (inv) => run(inv),
  receive: async ({ args: a }) => {
    // nncp-toss says which node sent the input; run by hand, nobody does.
    const r = await load(String(a.net)).receive(String(a.place), process.stdin, {
      host: hostArg(a),
      sender: process.env.NNCP_SENDER || undefined,
    });
    if (r.duplicates > 0)
      process.stderr.write(`fspl net receive: ${r.stored} stored, ${r.duplicates} already received (dropped)\n`);
    if (r.cut)
      process.stderr.write(
        `fspl net receive: ${r.cut}: its sender stopped while writing; the ${r.stored} ` +
          `whole tokens are stored, the rest comes again\n`,
      );
    return 0;
  },
  status: async ({ args: a }) => {
    const report = await load(String(a.net)).status({ host: hostArg(a) });
    writeOut(a.json ? `${JSON.stringify(netStatusJson(report), null, 2)}\n` : formatNetStatus(report));
    return report.state === 'stuck' ? 3 : 0;
  },
  simulate: ({ args: a }) => simulateCommand(a),
  dot: async ({ args: a }) => {
    const net = load(String(a.net));
    const dot = net.dot(a.live ? liveDotState(await net.status()) : undefined);
    writeOut(a.svg ? await dotToSvg(dot) : dot);
    return 0;
  },
  serve: (inv) => serve(inv),
  retry: ({ args: a }) => retry(a),
  ls: async ({ args: a }) => {
    await printTokens(load(String(a.net)), String(a.place), !!a.json, hostArg(a));
    return 0;
  },
  'set-aside': async ({ args: a }) => {
    const r = await load(String(a.net)).setAside(
      String(a.place),
      { key: a.key, seq: seqArg(a.seq) },
      { reason: a.reason, host: hostArg(a) },
    );
    writeOut(
      `set aside ${r.key}: ${r.place} #${r.seq} -> set-aside #${r.asideSeq}` +
        (r.nop ? ` (a NOP took number ${r.seq})\n` : '\n'),
    );
    return 0;
  },
  show: async ({ args: a }) => {
    await printToken(load(String(a.net)), String(a.place), { key: a.key, seq: seqArg(a.seq) }, !!a.payload, hostArg(a));
    return 0;
  },
  pause: ({ args: a }) => {
    const rec = load(String(a.net)).pause(String(a.transition), { reason: a.reason, host: hostArg(a), kill: !!a.kill });
    writeOut(`${rec.transition} ${pauseText(rec)}\n`);
    return 0;
  },
  resume: ({ args: a }) => {
    const rec = load(String(a.net)).resume(String(a.transition), { host: hostArg(a) });
    writeOut(
      rec ? `${rec.transition} resumed (it was ${pauseText(rec)})\n` : `${String(a.transition)} was not paused\n`,
    );
    return 0;
  },
};

function seqArg(v: string | undefined): bigint | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw badValue(`invalid --seq '${v}': give a token's number`);
  return BigInt(v);
}

/** `net retry`: one line per token moved (or, with --dry-run, that would move). */
async function retry(a: NetArgs<'retry'>): Promise<number> {
  const keys = a.key === undefined ? undefined : [...a.key];
  const r = await load(String(a.net)).retry({
    errorPlace: a['error-place'],
    keys,
    transition: a.transition,
    all: !!a.all,
    to: a.to,
    dryRun: !!a['dry-run'],
    setAside: !!a['set-aside'],
    seq: seqArg(a.seq),
    host: hostArg(a),
  });
  printRetry(r);
  return 0;
}

/** Run one parsed `fspl net` subcommand (parse/command-line.ts); resolves to the exit status. */
export async function runNet(inv: Invocation): Promise<number> {
  try {
    const name = inv.command;
    if (!isNetCommand(name)) throw new UsageError(`unknown net command '${name}'`, 'fspl net --help');
    return await handle(name, inv);
  } catch (err) {
    if (err instanceof NetFileError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    if (err instanceof NetRequestError) {
      process.stderr.write(`Error: ${err.message.split('\n')[0]}\n`); // bad input: one line, exit 2
      return 2;
    }
    return reportError(err);
  }
}

function isNetCommand(name: string): name is NetCommandName {
  return Object.hasOwn(handlers, name);
}

/** Net subcommand `name`'s handler, on its invocation as it reads it (typed from its grammar). */
function handle<N extends NetCommandName>(name: N, inv: Invocation): Promise<number> | number {
  const handler: Handlers[N] = handlers[name];
  return handler(netInvocation(inv, name));
}

/** Exit 0, or 1 when a way to another host (--host) would fail now. */
async function check(file: string, host: string | undefined): Promise<number> {
  const net = load(file);
  if (host !== undefined) hostView(net.model, host); // an unknown host is refused before anything is said to be ok
  const warnings = net.check();
  for (const w of warnings) process.stderr.write(`${file}: warning: ${w.message}\n`);
  writeOut(
    `${file}: ok: ${net.model.places.size} places, ${net.model.transitions.size} ` +
      `transitions, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}\n`,
  );
  if (host === undefined) return 0;
  let failed = 0;
  for (const p of await net.probeHost(host)) {
    const nncp = p.via === 'ssh' ? undefined : p.via.nncp;
    const how = nncp === undefined ? `:${p.remoteDir} over ssh` : ` through NNCP (node ${nncp})`;
    const where = `${file}: host ${host} sends ${p.place} to ${p.host}${how}`;
    if (p.error !== undefined) {
      failed++;
      process.stderr.write(`${where}: ${p.error}\n`);
    } else if (nncp !== undefined)
      writeOut(`${where}: ok (NNCP knows the node; its handle is checked there by fspl net check --host ${p.host})\n`);
    else
      writeOut(
        `${where}: ok (${p.fspl ? `seals checked there by ${p.fspl}` : 'no fspl: there, lengths checked only'})\n`,
      );
  }
  for (const c of net.checkSigning(host)) {
    const where = `${file}: host ${host}: ${c.what}`;
    if (c.error !== undefined) {
      failed++;
      process.stderr.write(`${where}: ${c.error}\n`);
    } else writeOut(`${where}: ok (${c.detail})\n`);
  }
  for (const r of await net.checkReceiving(host)) {
    const where = `${file}: host ${host} receives ${r.place} from ${r.from} through NNCP`;
    if (r.error !== undefined) {
      failed++;
      process.stderr.write(`${where}: ${r.error}\n`);
    } else writeOut(`${where}: ok (${r.detail})\n`);
  }
  return failed > 0 ? 1 : 0;
}

async function run({ args: a, logLevel }: NetInvocation<'run'>): Promise<number> {
  const level = checkLogLevel(logLevel);
  // Before the net file is read: a large net's YAML is the run's first hot code.
  (await import('../runtime/v8-tuning.js')).tuneForLongRun('net');
  const net = load(String(a.net));
  const workers = a.workers === undefined ? undefined : Number(a.workers);
  if (workers !== undefined && !(Number.isInteger(workers) && workers >= 1))
    throw badValue(`invalid --workers '${String(a.workers)}': give a whole number of at least 1`);
  const pollInterval = seconds(a['poll-interval'], '--poll-interval');
  const graceText = a['stop-timeout'] ?? a.grace;
  const grace = graceText === undefined ? undefined : Number(graceText);
  if (grace !== undefined && !(grace >= 0))
    throw badValue(`invalid ${a['stop-timeout'] === undefined ? '--grace' : '--stop-timeout'} '${String(graceText)}'`);
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const progress =
    process.stderr.isTTY && a.progress !== false
      ? new NetProgressLine(process.stderr, [...net.model.places.keys()])
      : undefined;
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

async function serve({ args: a, logLevel }: NetInvocation<'serve'>): Promise<number> {
  const level = checkLogLevel(logLevel);
  const port = Number(a.port);
  if (!(Number.isInteger(port) && port >= 0 && port <= 65535))
    throw badValue(`invalid --port '${String(a.port)}': give a number from 0 to 65535`);
  const streams = String(a['max-streams']);
  const maxStreams = Number(streams);
  if (!(/^[0-9]+$/.test(streams) && Number.isSafeInteger(maxStreams) && maxStreams >= 1))
    throw badValue(`invalid --max-streams '${streams}': give a whole number of at least 1`);
  const net = load(String(a.net));
  const server = await serveNet(net.model, {
    port,
    host: String(a.host),
    netHost: a['net-host'],
    allowHosts: a['allow-host'],
    maxStreams,
    logger: createLogger(level),
  });
  writeOut(`Serving ${net.model.file ?? net.model.dir} at ${server.url} (read-only; Ctrl-C stops)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.close();
  return 0;
}

function hostArg(a: { readonly host: string | undefined }): string | undefined {
  return a.host;
}

function simulateCommand(a: NetArgs<'simulate'>): number {
  const net = load(String(a.net));
  const whole = (v: unknown, what: string, min: number) => {
    const n = Number(v);
    if (!(Number.isSafeInteger(n) && n >= min))
      throw badValue(`invalid ${what} '${String(v)}': give a whole number of at least ${min}`);
    return n;
  };
  const tokens = whole(a.tokens, '--tokens', 0);
  const workers = a.workers === undefined ? os.availableParallelism() : whole(a.workers, '--workers', 1);
  const seed = a.seed === undefined ? undefined : whole(a.seed, '--seed', 0);
  const service: Record<string, ServiceTime> = {};
  for (const text of a.service ?? []) {
    try {
      const s = parseService(text);
      service[s.transition] = s.service;
    } catch (err) {
      throw badValue(err instanceof Error ? err.message : String(err));
    }
  }
  for (const name of Object.keys(service))
    if (!net.model.transitions.has(name))
      throw badValue(`--service names ${JSON.stringify(name)}, which is not a transition of the net`);
  const report = simulate(net.model, { tokens, workers, service, seed });
  writeOut(a.json ? `${JSON.stringify(report, null, 2)}\n` : formatSimulation(report));
  return 0;
}
