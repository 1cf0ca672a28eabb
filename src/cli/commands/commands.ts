/**
 * The subcommand handlers: each turns parsed options into one library call and prints the result.
 * No queue, packet or process logic lives here.
 */
import fs from 'node:fs';
import { createLogger, type Logger } from '../../base/log.js';
import type { PrepareOptions } from '../../packet/prepare.js';
import type { PacketHeader } from '../../packet/types.js';
import { processFd } from '../../process/process.js';
import type { JobLocation } from '../../queue/jobenv.js';
import { Queue } from '../../queue/queue.js';
import {
  allowedSignersArg,
  flag,
  intArg,
  maxHeaderSizeArg,
  processOptions,
  required,
  type StringArgs,
  seqArg,
  seqsArg,
  signArg,
  str,
  strings,
  verifyDecoderArg,
} from '../parse/args.js';
import type { Invocation } from '../parse/grammar.js';
import { type FsplArgs, type FsplCommandName, fsplInvocation } from '../parse/spec.js';
import { STDIN_JOB, StopSignals } from '../runtime/stop-signals.js';
import { checkLogLevel, UsageError, writeOut } from '../text/output.js';
import { queueProcess } from './queue-process.js';

// What only some subcommands use is imported by them, when they run: every command pays for
// loading what is imported here, and `queue-process` most often.
const preparing = () => import('../../packet/prepare.js');
const sealedCopy = () => import('../../packet/seal/sealed-copy.js');
const json = () => import('../../json.js');
const jobenv = () => import('../../queue/jobenv.js');

/** The queue of -q DIR, read through -d DECODER when the command has it and it is given. */
function queue(inv: Invocation<StringArgs<'queuedir'> & Partial<StringArgs<'decoder'>>>, log: Logger): Queue {
  return Queue.open(required(inv, 'queuedir'), { decoder: inv.args.decoder, logger: log });
}

/** The queue of a command that reads its jobs' headers: as queue(), with --max-header-size. */
function scannedQueue(inv: Invocation<StringArgs<'queuedir' | 'decoder' | 'max-header-size'>>, log: Logger): Queue {
  return Queue.open(required(inv, 'queuedir'), {
    decoder: inv.args.decoder,
    maxHeaderSize: maxHeaderSizeArg(inv),
    logger: log,
  });
}

function openInput(input: string | undefined): number | undefined {
  if (input === undefined) return undefined;
  if (input === '-') return 0;
  const fd = fs.openSync(input, 'r');
  if (fs.fstatSync(fd).isDirectory()) {
    fs.closeSync(fd);
    throw Object.assign(new Error('Is a directory'), { code: 'EISDIR', path: input });
  }
  return fd;
}

async function prepareCmd(
  inv: Invocation<StringArgs<'seqfile' | 'sign' | 'sign-command'>>,
  spec: PrepareOptions,
  input?: string,
  seal = false,
): Promise<number> {
  const sign = signArg(inv);
  // Unlike the reference, open (and check) the payload before taking a sequence number, so that a
  // bad path neither uses one up nor leaves half a packet on stdout; and give the number back if
  // the packet can't be written out (or signed).
  const inFd = openInput(input);
  const seqfile = required(inv, 'seqfile');
  if (sign) {
    const { writeSignedPacket } = await import('../../sign/prepare-signed.js');
    await writeSignedPacket(1, { ...spec, seqfile }, inFd, sign);
    return 0;
  }
  const [{ prepareHeader, writePacketSync, writeTakenSync }, { writeSealedPacketSync }] = await Promise.all([
    preparing(),
    sealedCopy(),
  ]);
  const header = prepareHeader({ ...spec, seqfile });
  writeTakenSync(seqfile, header.seq, () =>
    seal ? writeSealedPacketSync(1, header, inFd) : writePacketSync(1, header, inFd),
  );
  return 0;
}

/** `queue-info` and `stdin-info`: a job's variables, or its JSON document. */
async function infoText(header: PacketHeader, asJson: boolean, where?: JobLocation): Promise<string | Buffer> {
  if (asJson) {
    const { jobInfoToJson, toJsonDocument } = await json();
    return toJsonDocument(jobInfoToJson(header, where));
  }
  const { formatInfo, jobVariables } = await jobenv();
  return formatInfo(jobVariables(header, where));
}

function lsLine(seq: string, time: string, filename: string, failure?: string): string {
  return failure === undefined
    ? `${seq.padEnd(20)} ${time.padEnd(27)} ${filename}\n`
    : `${seq.padEnd(20)} ${time.padEnd(27)} ${filename.padEnd(46)} ${failure}\n`;
}

/** A failed job's facts in a few words: `job 7 of /srv/q, 3 tries, command exited with status 1, at ...`. */
function failureText(h: PacketHeader): string {
  const f = h.failure;
  if (!f) return '-';
  return `job ${f.seq} of ${f.queue}, ${f.attempts} tr${f.attempts === 1 ? 'y' : 'ies'}, ${f.why}, at ${f.at}`;
}

/** --not-before TIME (packet/not-before.ts), resolved now; a usage error if it reads as neither form. */
async function notBeforeArg(text: string | undefined): Promise<Date | undefined> {
  if (text === undefined) return undefined;
  const { parseNotBefore } = await import('../../packet/not-before.js');
  try {
    return new Date(parseNotBefore(text));
  } catch (err) {
    throw new UsageError(`invalid value '${text}' for --not-before: ${(err as Error).message}`);
  }
}

/** The subcommands handled here: all but standalone-commands.ts's. */
type Handled = Exclude<FsplCommandName, 'gen-uuid' | 'gen-filename' | 'show-license'>;

/** Each subcommand's handler, on its own arguments (FsplArgs): it resolves to the exit status. */
type Handlers = { [N in Handled]: (inv: Invocation<FsplArgs<N>>, log: Logger) => Promise<number> | number };

const handlers: Handlers = {
  prepare: async (inv) => {
    const { captureEnv, sealByDefault } = await preparing();
    const retries = intArg(inv, 'retries');
    if (retries !== undefined && retries > 0xffff_ffff)
      throw new UsageError(`invalid value '${str(inv, 'retries')}' for --retries: at most 4294967295`);
    const notBefore = await notBeforeArg(str(inv, 'not-before'));
    const spec = { kind: 'Command' as const, params: inv.params, env: captureEnv(), retries, notBefore };
    return prepareCmd(inv, spec, str(inv, 'input'), flag(inv, 'seal') || sealByDefault());
  },
  'prepare-nop': (inv) => prepareCmd(inv, { kind: 'NOP' }),
  'prepare-fail': (inv) => prepareCmd(inv, { kind: 'Fail' }),
  'prepare-get-next': async (inv) => {
    writeOut(`${(await preparing()).getSenderNext(required(inv, 'seqfile'))}\n`);
    return 0;
  },
  'prepare-set-next': async (inv) => {
    const seq = seqArg(inv, 'id');
    (await preparing()).setSenderNext(required(inv, 'seqfile'), seq);
    return 0;
  },

  'queue-init': (inv) => {
    Queue.init(required(inv, 'queuedir'), { appendOnly: flag(inv, 'append-only') });
    return 0;
  },
  'queue-get-next': async (inv, log) => {
    const next = queue(inv, log).getNext();
    if (flag(inv, 'json')) {
      const { nextseqToJson, toJsonDocument } = await json();
      writeOut(toJsonDocument(nextseqToJson(next)));
    } else writeOut(`${next}\n`);
    return 0;
  },
  'queue-retry': async (inv, log) => {
    const { retryFailedJobs } = await import('../../queue/failed-jobs.js');
    const jobs = seqsArg(inv, 'job');
    await retryFailedJobs(required(inv, 'queuedir'), required(inv, 'to'), {
      jobs: jobs.length > 0 ? jobs : undefined,
      seqfile: str(inv, 'seqfile'),
      logger: log,
    });
    return 0;
  },
  'queue-set-next': (inv, log) => {
    const seq = seqArg(inv, 'id');
    queue(inv, log).setNext(seq);
    return 0;
  },
  'queue-write': async (inv, log) => {
    const allowedSigners = await allowedSignersArg(inv);
    const q = Queue.open(required(inv, 'queuedir'), { allowedSigners, logger: log });
    q.assertExists();
    // Installs Queue.writeFromFd, with the packet checks it needs: loaded by this command only.
    await import('../../queue/write-from-fd.js');
    q.writeFromFd(0);
    return 0;
  },
  'queue-ls': async (inv, log) => {
    const q = scannedQueue(inv, log);
    q.assertExists();
    const jobs = await q.list();
    if (flag(inv, 'json')) {
      const { jobEntryToJson, toJsonLine } = await json();
      // JSON Lines, written in batches of about 64 KiB (not one write per job).
      let batch = '';
      for (const j of jobs) {
        batch += toJsonLine(jobEntryToJson(j));
        if (batch.length >= 65536) {
          writeOut(batch);
          batch = '';
        }
      }
      if (batch) writeOut(batch);
      return 0;
    }
    const { rfc3339Local } = await import('../../packet/time.js');
    // A failed-jobs queue's listing says why each failed, in a last column (others list as the reference).
    const failures = jobs.some((j) => j.header.failure);
    let out = lsLine('ID', 'creation timestamp', 'filename', failures ? 'failure' : undefined);
    for (const j of jobs)
      out += lsLine(
        j.header.seq.toString(),
        rfc3339Local(j.header.ctime.secs),
        j.filename,
        failures ? failureText(j.header) : undefined,
      );
    writeOut(out);
    return 0;
  },
  'queue-info': async (inv, log) => {
    const seq = seqArg(inv, 'job');
    const q = scannedQueue(inv, log);
    q.assertExists();
    const job = await q.find(seq);
    writeOut(await infoText(job.header, flag(inv, 'json'), { queuedir: q.dir, filename: job.filename }));
    return 0;
  },
  'queue-payload': async (inv, log) => {
    const seq = seqArg(inv, 'job');
    const q = scannedQueue(inv, log);
    q.assertExists();
    const { filename } = await q.find(seq);
    if (q.decoder === undefined) {
      // Plain file: copy descriptor to descriptor, no stream machinery.
      const [job, { copySealedSync }, { copy }] = await Promise.all([
        q.openPlainJob(filename),
        sealedCopy(),
        import('../../sys/copy.js'),
      ]);
      try {
        if (job.header.seal) copySealedSync(job.payload, 1, job.header.seal);
        else copy(job.payload, 1);
      } finally {
        job.close();
      }
      return 0;
    }
    for await (const chunk of await q.openPayload(filename)) writeOut(chunk as Buffer);
    return 0;
  },
  'queue-process': queueProcess,
  'queue-receive': async (inv) => {
    const { receivePackets } = await import('../../send/receive.js');
    const from = strings(inv, 'from');
    const bad = from.find((n) => !/^[^\s\0-]\S*$/.test(n));
    if (bad !== undefined)
      throw new UsageError(`invalid --from '${bad}': give an NNCP node's id or its name in the NNCP config`, false);
    const r = await receivePackets(required(inv, 'queuedir'), process.stdin, {
      from: from.length > 0 ? from : undefined,
      sender: process.env.NNCP_SENDER || undefined,
      allowedSigners: await allowedSignersArg(inv),
    });
    for (const why of r.refused) process.stderr.write(`fspl queue-receive: ${why}; moved to refused/\n`);
    if (r.cut)
      process.stderr.write(
        `fspl queue-receive: ${r.cut}: its sender stopped while writing; the ${r.stored} ` +
          `whole packets are stored, the rest comes again\n`,
      );
    return 0;
  },
  'queue-send': async (inv, log) => (await import('./queue-send.js')).queueSend(inv, log),

  'stdin-info': async (inv) => {
    const { readHeaderSync } = await import('../../packet/read.js');
    writeOut(await infoText(readHeaderSync(0), flag(inv, 'json')));
    return 0;
  },
  'queue-status': async (inv, log) => (await import('./queue-status.js')).queueStatusCommand(inv, log),
  'stdin-signature': async (inv) => {
    const [{ readHeaderSync }, { armoredSignature, signedData }] = await Promise.all([
      import('../../packet/read.js'),
      import('../../sign/packet-signature.js'),
    ]);
    const header = readHeaderSync(0);
    writeOut(flag(inv, 'data') ? signedData(header) : armoredSignature(header));
    return 0;
  },
  'stdin-payload': async () => {
    const [{ readHeaderSync }, { copySealedSync }, { copy }] = await Promise.all([
      import('../../packet/read.js'),
      sealedCopy(),
      import('../../sys/copy.js'),
    ]);
    const { seal } = readHeaderSync(0);
    if (seal) copySealedSync(0, 1, seal);
    else copy(0, 1);
    return 0;
  },
  'stdin-process': async (inv, log) => {
    const options = {
      ...processOptions(inv, log),
      decoder: str(inv, 'decoder'),
      verifyDecoder: verifyDecoderArg(inv),
      allowedSigners: await allowedSignersArg(inv),
    };
    // From the command's start, the first SIGINT or SIGTERM lets it finish (stop-signals.ts).
    const signals = new StopSignals(log, STDIN_JOB, options.stopTimeout);
    try {
      await processFd(0, {
        ...options,
        signal: signals.stop.signal,
        interrupt: signals.interrupt.signal,
        onStart: () => signals.listen(),
      });
      return 0;
    } finally {
      signals.close();
    }
  },
};

export async function run(inv: Invocation): Promise<number> {
  const name = inv.command;
  if (!isHandled(name)) throw new UsageError(`unknown subcommand '${name}'`);
  // One logger for the run; a bad level is a usage error whatever the subcommand.
  return handle(name, inv, createLogger(checkLogLevel(inv.logLevel)));
}

function isHandled(name: string): name is Handled {
  return Object.hasOwn(handlers, name);
}

/** Subcommand `name`'s handler, on its invocation as it reads it (typed from its grammar). */
function handle<N extends Handled>(name: N, inv: Invocation, log: Logger): Promise<number> | number {
  const handler: Handlers[N] = handlers[name];
  return handler(fsplInvocation(inv, name), log);
}
