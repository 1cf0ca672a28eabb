/**
 * The receiver that a store-and-forward transport feeds: `fspl queue-receive -q DIR` and
 * `fspl net receive NET PLACE`, NNCP exec handles. It reads frames (frames.ts) from its input and
 * stores each packet in the queue's jobs/ under its own name, fspl-ID.fspl, exactly once: the
 * queue's ledger (received.ts) records each number taken, whatever order they come in, and a
 * packet whose number is there is a copy (a retried toss, a replayed transfer, a second route,
 * a resend after the sender crashed) and is dropped.
 *
 * Durable in this order, for each group of packets (up to GROUP), so that a power cut or a
 * `kill -9` at any instant neither loses a packet the transport was told was taken (the exit
 * status) nor stores one twice:
 *
 *   | step                                         | durable once                          |
 *   | -------------------------------------------- | ------------------------------------- |
 *   | each packet as jobs/.fspl-in-ID.part         | its fsync, then one fsync of jobs/    |
 *   | the ledger with the group's numbers          | received.ts (its file, then DIR)      |
 *   | each part renamed to jobs/fspl-ID.fspl       | one fsync of jobs/                    |
 *
 * A crash before the ledger leaves parts whose numbers are not in it: the next receiver removes
 * them, and the transport offers the packets again (the handle never exited 0). A crash after the
 * ledger leaves parts whose numbers are: the next receiver renames them (`finishParts`), and a
 * copy offered meanwhile is dropped. Only one receiver works on a queue at once (DIR/recv.lock,
 * as the ssh receiver's).
 *
 * Each packet is checked before it is taken: its header's number is the frame's, and a sealed
 * packet's payload matches its seal (length and CRC-32).
 *
 * With `from` (`fspl queue-receive --from NODE`; `fspl net receive` gives the nodes its net says
 * feed the place), the input is taken only from those NNCP nodes: `sender` (NNCP_SENDER, set by
 * nncp-toss) must be one of them (nncp-sender.ts). Anything else is refused before the input, the
 * lock or the ledger is touched: nothing is stored, and the exit is non-zero.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { LockedError, ReceiveCutError, ReceiveError } from '../base/errors.js';
import { waitUnlessAborted } from '../base/timer.js';
import { readPacket } from '../packet/index.js';
import { readHeaderAndLengthSync, readHeaderSync } from '../packet/read.js';
import { refuseJobFile } from '../queue/refused.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';
import { judgeSignedFile } from '../sign/judge.js';
import { fsyncDir } from '../sys/durable.js';
import { closeQuietly, forEachDirEntry, fsyncSync, unlinkQuietly, writeAllSync } from '../sys/io.js';
import { FileLock } from '../sys/lock.js';
import { createFresh, openJobFile } from '../sys/untrusted.js';
import { type FrameHead, FrameReader } from './frames.js';
import { admitSender } from './nncp-sender.js';
import { ReceivedLedger } from './received.js';

/** Packets made durable together (one ledger write, two fsyncs of jobs/). */
const GROUP = 64;
/** How long a receiver waits for another one on the same queue before it gives up (exit non-zero: NNCP tries again). */
const LOCK_WAIT_MS = 120_000;

export interface ReceiveSummary {
  /** Packets stored. */
  stored: number;
  /** Copies dropped: their numbers were taken before. */
  duplicates: number;
  /** Parts of an earlier receiver that was stopped after recording them, now stored. */
  finished: number;
  /**
   * Packets refused by their signature (allowedSigners): moved
   * to refused/, their numbers not taken. Why, one line each.
   */
  refused: string[];
  /** Set when the input ended inside a frame (its sender was stopped while writing): why. */
  cut?: string;
}

export interface ReceiveOptions {
  /** Where the queue is, for messages (default: its directory). */
  what?: string;
  signal?: AbortSignal;
  /**
   * Take the input only from these NNCP nodes: ids, or names of neighbours in the NNCP config
   * `nncpCfg`. Without it, from anyone.
   */
  from?: readonly string[];
  /** The sending node's id, as nncp-toss gives an exec handle in NNCP_SENDER (checked against `from`). */
  sender?: string;
  /**
   * The receiving node's NNCP config, where names in `from` are looked up (default: $NNCPCFG, else /etc/nncp.hjson).
   */
  nncpCfg?: string;
  /**
   * Take only packets signed by a key these allow (src/sign/). Any other is moved to the queue's
   * refused/ with a note, its number not taken (the real packet may still come), and the rest
   * of the input goes on: the transport is not asked to offer it again.
   */
  allowedSigners?: AllowedSigners;
}

interface Part {
  head: FrameHead;
  temp: string;
  final: string;
}

const PART_RE = /^\.fspl-in-([A-Za-z0-9-]+)\.part$/;

/** Store the packets framed on `input` in the queue at `dir` (see above). */
export async function receivePackets(dir: string, input: Readable, opts: ReceiveOptions = {}): Promise<ReceiveSummary> {
  const what = opts.what ?? `queue ${dir}`;
  if (opts.from !== undefined) await admitSender({ from: opts.from, sender: opts.sender, cfg: opts.nncpCfg, what });
  const jobs = path.join(dir, 'jobs');
  if (!fs.statSync(jobs, { throwIfNoEntry: false })?.isDirectory())
    throw new ReceiveError(
      `no queue at ${opts.what ?? dir} (make it with fspl queue-init -q DIR, or fspl net init --host for a net)`,
    );
  const lock = await takeLock(path.join(dir, 'recv.lock'), opts.signal);
  try {
    const ledger = ReceivedLedger.read(dir);
    const summary: ReceiveSummary = { stored: 0, duplicates: 0, finished: finishParts(jobs, ledger), refused: [] };
    const frames = new FrameReader(input);
    let group: Part[] = [];
    const taking = new Set<bigint>();
    try {
      for (let head = await frames.head(); head; head = await frames.head()) {
        if (ledger.has(head.seq) || taking.has(head.seq)) {
          await frames.body(head.length, () => {});
          summary.duplicates++;
          continue;
        }
        const part = await takePart(jobs, head, frames);
        const why = opts.allowedSigners && judgeSignature(part, opts.allowedSigners);
        if (why) {
          refuseJobFile(dir, path.basename(part.temp), why, path.basename(part.final));
          summary.refused.push(why);
          continue;
        }
        group.push(part);
        taking.add(head.seq);
        if (group.length >= GROUP) {
          summary.stored += await commitGroup(jobs, ledger, group);
          group = [];
        }
      }
    } catch (err) {
      // Cut short by its sender (ReceiveCutError): what came whole is kept, and the input is done
      // with (exit 0: NNCP would otherwise offer the same cut input forever); the sender never
      // counted the rest as handed over, and sends it again.
      if (!(err instanceof ReceiveCutError)) throw err;
      summary.cut = err.message;
    }
    summary.stored += await commitGroup(jobs, ledger, group);
    return summary;
  } finally {
    lock.release();
  }
}

async function takeLock(file: string, signal: AbortSignal | undefined): Promise<FileLock> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      return FileLock.acquire(file, { create: true, wait: false });
    } catch (err) {
      if (!(err instanceof LockedError) || Date.now() > deadline || signal?.aborted) {
        if (err instanceof LockedError) throw new ReceiveError(`${file} is held by another receiver`);
        throw err;
      }
      await waitUnlessAborted(200, signal);
    }
  }
}

/** One packet from the input into jobs/.fspl-in-ID.part, fsynced and checked. */
async function takePart(jobs: string, head: FrameHead, frames: FrameReader): Promise<Part> {
  const part: Part = {
    head,
    temp: path.join(jobs, `.fspl-in-${head.id}.part`),
    final: path.join(jobs, `fspl-${head.id}.fspl`),
  };
  const fd = createFresh(part.temp, 0o644); // in jobs/, which others may write (untrusted.ts)
  try {
    await frames.body(head.length, (chunk) => writeAllSync(fd, chunk));
    fsyncSync(fd);
  } catch (err) {
    closeQuietly(fd);
    unlinkQuietly(part.temp);
    throw err;
  }
  closeQuietly(fd);
  try {
    await check(part);
  } catch (err) {
    unlinkQuietly(part.temp);
    throw err;
  }
  return part;
}

/** The packet's number is the frame's, and a sealed payload matches its seal. */
async function check(part: Part): Promise<void> {
  let packet: Awaited<ReturnType<typeof readPacket>>;
  try {
    packet = await readPacket({ path: part.temp });
  } catch (err) {
    throw new ReceiveError(
      `packet ${part.head.id} (number ${part.head.seq}) is not a whole packet: ${(err as Error).message}`,
    );
  }
  if (packet.seq !== part.head.seq) {
    packet.payload.destroy();
    throw new ReceiveError(`packet ${part.head.id} is numbered ${packet.seq}, but its frame says ${part.head.seq}`);
  }
  try {
    for await (const _ of packet.payload);
  } catch (err) {
    throw new ReceiveError(`packet ${part.head.id} (number ${part.head.seq}) is damaged: ${(err as Error).message}`);
  }
}

/** Whether a checked part's signature lets it in (sign/judge.ts): undefined if so, else why not. */
function judgeSignature(part: Part, signers: AllowedSigners): string | undefined {
  const fd = openJobFile(part.temp);
  try {
    const { header, length } = readHeaderAndLengthSync(fd);
    const verdict = judgeSignedFile(header, fd, length, signers);
    if (verdict.kind === 'signed' && verdict.payload.spooled) closeQuietly(verdict.payload.fd);
    return verdict.kind === 'refused' ? verdict.why : undefined;
  } finally {
    closeQuietly(fd);
  }
}

/** Make a group durable and visible, in the order of the table above; the number stored. */
async function commitGroup(jobs: string, ledger: ReceivedLedger, group: readonly Part[]): Promise<number> {
  if (group.length === 0) return 0;
  fsyncDir(jobs); // the parts' names
  for (const p of group) ledger.add(p.head.seq);
  ledger.write();
  for (const p of group) fs.renameSync(p.temp, p.final);
  fsyncDir(jobs); // the jobs' names: only now is the transport told (by the exit status)
  return group.length;
}

/**
 * An earlier receiver's parts: stored (renamed) if the ledger has their numbers, removed if not
 * (the transport offers those again). The number renamed.
 */
function finishParts(jobs: string, ledger: ReceivedLedger): number {
  let renamed = 0;
  const parts: string[] = [];
  forEachDirEntry(jobs, (e) => {
    if (PART_RE.test(e.name)) parts.push(e.name);
  });
  for (const name of parts) {
    const id = PART_RE.exec(name)![1]!;
    const temp = path.join(jobs, name);
    let seq: bigint | undefined;
    const fd = openJobFile(temp); // in jobs/: not through a link planted there
    try {
      seq = readHeaderSync(fd).seq;
    } catch {
      seq = undefined; // cut short before its fsync: never recorded
    } finally {
      closeQuietly(fd);
    }
    if (seq !== undefined && ledger.has(seq)) {
      fs.renameSync(temp, path.join(jobs, `fspl-${id}.fspl`));
      renamed++;
    } else unlinkQuietly(temp); // not fsynced: a part a cut brings back is removed again next time
  }
  if (renamed > 0) fsyncDir(jobs); // the finished parts' job names, before any new packet is taken
  return renamed;
}
