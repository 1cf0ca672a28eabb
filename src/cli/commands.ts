/**
 * The subcommand handlers: each turns parsed options into one library call and prints the result.
 * No queue, packet or process logic lives here.
 */
import fs from 'node:fs';
import { copy } from '../copy.js';
import { createLogger, type Logger } from '../log.js';
import { formatInfo, jobVariables } from '../jobenv.js';
import { readHeaderSync } from '../packet/read.js';
import { copySealedSync, writeSealedPacketSync } from '../packet/sealed-copy.js';
import { captureEnv, getSenderNext, prepareHeader, sealByDefault, setSenderNext, writePacketSync, type PrepareOptions } from '../prepare.js';
import { processFd } from '../process.js';
import { Queue } from '../queue.js';
import { rfc3339Local } from '../time.js';
import { jobEntryToJson, jobInfoToJson, nextseqToJson, statusToJson, toJsonDocument, toJsonLine } from '../json.js';
import { queueStatus } from '../status/report.js';
import { formatStatusText } from './status-text.js';
import type { Invocation } from './spec.js';
import { UsageError, checkLogLevel, writeOut } from './output.js';
import { processOptions, required, seqArg, str } from './args.js';
import { queueProcess } from './queue-process.js';

function queue(inv: Invocation, log: Logger): Queue {
  return Queue.open(required(inv, 'queuedir'), { decoder: str(inv, 'decoder'), logger: log });
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

function prepareCmd(inv: Invocation, spec: PrepareOptions, input?: string, seal = false): number {
  // Unlike the reference, open (and check) the payload before taking a sequence number, so that a
  // bad path neither uses one up nor leaves half a packet on stdout.
  const inFd = openInput(input);
  const header = prepareHeader({ ...spec, seqfile: required(inv, 'seqfile') });
  if (seal) writeSealedPacketSync(1, header, inFd);
  else writePacketSync(1, header, inFd);
  return 0;
}

function lsLine(seq: string, time: string, filename: string): string {
  return `${seq.padEnd(20)} ${time.padEnd(27)} ${filename}\n`;
}

const handlers: Record<string, (inv: Invocation, log: Logger) => Promise<number> | number> = {
  prepare: (inv) =>
    prepareCmd(inv, { kind: 'Command', params: inv.params, env: captureEnv() }, str(inv, 'input'), Boolean(inv.args.seal) || sealByDefault()),
  'prepare-nop': (inv) => prepareCmd(inv, { kind: 'NOP' }),
  'prepare-fail': (inv) => prepareCmd(inv, { kind: 'Fail' }),
  'prepare-get-next': (inv) => (writeOut(`${getSenderNext(required(inv, 'seqfile'))}\n`), 0),
  'prepare-set-next': (inv) => {
    const seq = seqArg(inv, 'id');
    setSenderNext(required(inv, 'seqfile'), seq);
    return 0;
  },

  'queue-init': (inv) => (Queue.init(required(inv, 'queuedir'), { appendOnly: Boolean(inv.args['append-only']) }), 0),
  'queue-get-next': (inv, log) => {
    const next = queue(inv, log).getNext();
    writeOut(inv.args.json ? toJsonDocument(nextseqToJson(next)) : `${next}\n`);
    return 0;
  },
  'queue-set-next': (inv, log) => {
    const seq = seqArg(inv, 'id');
    queue(inv, log).setNext(seq);
    return 0;
  },
  'queue-write': (inv, log) => {
    const q = queue(inv, log);
    q.assertExists();
    q.writeFromFd(0);
    return 0;
  },
  'queue-ls': async (inv, log) => {
    const q = queue(inv, log);
    q.assertExists();
    const jobs = await q.list();
    if (inv.args.json) {
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
    let out = lsLine('ID', 'creation timestamp', 'filename');
    for (const j of jobs) out += lsLine(j.header.seq.toString(), rfc3339Local(j.header.ctime.secs), j.filename);
    writeOut(out);
    return 0;
  },
  'queue-info': async (inv, log) => {
    const seq = seqArg(inv, 'job');
    const q = queue(inv, log);
    q.assertExists();
    const job = await q.find(seq);
    const where = { queuedir: q.dir, filename: job.filename };
    writeOut(inv.args.json ? toJsonDocument(jobInfoToJson(job.header, where)) : formatInfo(jobVariables(job.header, where)));
    return 0;
  },
  'queue-payload': async (inv, log) => {
    const seq = seqArg(inv, 'job');
    const q = queue(inv, log);
    q.assertExists();
    const { filename } = await q.find(seq);
    if (q.decoder === undefined) {
      // Plain file: copy descriptor to descriptor, no stream machinery.
      const job = await q.openJob(filename);
      try {
        if (job.header.seal) copySealedSync(job.payload as number, 1, job.header.seal);
        else copy(job.payload as number, 1);
      } finally {
        job.close();
      }
      return 0;
    }
    for await (const chunk of await q.openPayload(filename)) writeOut(chunk as Buffer);
    return 0;
  },
  'queue-process': queueProcess,

  'stdin-info': (inv) => {
    const header = readHeaderSync(0);
    writeOut(inv.args.json ? toJsonDocument(jobInfoToJson(header)) : formatInfo(jobVariables(header)));
    return 0;
  },
  'queue-status': async (inv, log) => {
    // Exit 3 when the queue can not make progress (stuck); the diagnosis itself succeeded.
    const status = await queueStatus(queue(inv, log));
    writeOut(inv.args.json ? toJsonDocument(statusToJson(status)) : formatStatusText(status));
    return status.canProgress ? 0 : 3;
  },
  'stdin-payload': () => {
    const { seal } = readHeaderSync(0);
    if (seal) copySealedSync(0, 1, seal);
    else copy(0, 1);
    return 0;
  },
  'stdin-process': async (inv, log) => (await processFd(0, processOptions(inv, log)), 0),
};

export async function run(inv: Invocation): Promise<number> {
  const h = handlers[inv.command];
  if (!h) throw new UsageError(`unknown subcommand '${inv.command}'`);
  // One logger for the run; a bad level is a usage error whatever the subcommand.
  return h(inv, createLogger(checkLogLevel(inv.logLevel)));
}

