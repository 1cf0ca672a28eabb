/**
 * A queue directory:
 *
 *   DIR/nextseq        the next sequence number to process
 *   DIR/nextseq.lock   its lock
 *   DIR/jobs/          job files, named fspl-*.fspl
 *
 * Writing needs no lock: a job is written under a temporary name, fsynced, then renamed into
 * place, so anything named fspl-*.fspl is complete.
 *
 * Queue.writeFromFd, which checks the packet it copies in (its header, its seal, its signature),
 * is declared and installed by write-from-fd.ts, which the public entries and `fspl queue-write`
 * load: a process that only runs a queue's jobs does not load those checks.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { describeSystemError, NotFoundError, QueueError } from '../base/errors.js';
import { type Logger, silentLogger } from '../base/log.js';
import { checkSeconds } from '../base/timer.js';
import { nativeOpenHead } from '../packet/native-heads.js';
import { checkMaxHeaderSize, type PacketHeader } from '../packet/types.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';
import { fsyncDir } from '../sys/durable.js';
import { closeQuietly, forEachDirName, writeAllSync } from '../sys/io.js';
import { SeqFile } from '../sys/seqfile.js';
import { openJobFile } from '../sys/untrusted.js';
import { writeJob, writeJobSync } from './job-write.js';
import { compareBySeq, compareByTimestamp, indexBySeq, isJobFilename, type JobEntry } from './jobs.js';
import type { QueueOptions, ScanOptions } from './queue-options.js';
import { finishCutRefusals, refuseJobFile } from './refused.js';
import type { JobDetails, OpenJob, OrderBy, PlainOpenJob, QueuedJob } from './types.js';

export { compareBySeq, compareByTimestamp, genFilename, indexBySeq, isJobFilename, type JobEntry } from './jobs.js';
export type { Executor, QueueOptions, ScanOptions } from './queue-options.js';
export type { DecodedOpenJob, JobDetails, OpenJob, PlainOpenJob, QueuedJob } from './types.js';

// Loaded on first use, so that a process that reads no header or payload (`queue-process` of an
// empty queue, from cron) does not load the codec, streams and decoders.
// Each promise kept: the bundle turns every import() into a fresh copy of the module's exports, per job.
let headersModule: Promise<typeof import('./job-headers.js')> | undefined;
let decodingModule: Promise<typeof import('./decoder.js')> | undefined;
let packetsModule: Promise<typeof import('../packet/stream.js')> | undefined;
let readModule: Promise<typeof import('../packet/read.js')> | undefined;
const headers = () => (headersModule ??= import('./job-headers.js'));
const decoding = () => (decodingModule ??= import('./decoder.js'));
const packets = () => (packetsModule ??= import('../packet/stream.js'));
const reading = () => (readModule ??= import('../packet/read.js'));

/** What openJob reads at once for the header: real headers are far smaller. */
const HEAD_READ = 4096;

export class Queue {
  /** The directory as given (FSPL_JOB_QUEUEDIR and FSPL_JOB_FULLPATH use it verbatim). */
  readonly dir: string;
  readonly decoder: string | undefined;
  readonly decoderTimeout: number | undefined;
  readonly verifyDecoder: boolean;
  readonly maxHeaderSize: number;
  readonly allowedSigners: AllowedSigners | undefined;
  readonly logger: Logger;

  /** DIR/jobs and DIR/nextseq, computed once: path.join is costly on the per-job path. */
  readonly jobsDir: string;
  readonly seqfilePath: string;
  private readonly jobsPrefix: string;

  constructor(dir: string, options: QueueOptions = {}) {
    this.dir = dir;
    this.jobsDir = path.join(dir, 'jobs');
    this.seqfilePath = path.join(dir, 'nextseq');
    this.jobsPrefix = `${this.jobsDir}/`;
    this.decoder = options.decoder;
    checkSeconds(options.decoderTimeout, 'Queue: decoderTimeout');
    this.decoderTimeout = options.decoderTimeout;
    this.verifyDecoder = options.verifyDecoder ?? false;
    this.maxHeaderSize = checkMaxHeaderSize(options.maxHeaderSize, 'Queue: maxHeaderSize');
    this.allowedSigners = options.allowedSigners;
    this.logger = options.logger ?? silentLogger;
  }

  /** This queue with other allowed signers (the rest of its options as they are). */
  withAllowedSigners(allowedSigners: AllowedSigners | undefined): Queue {
    const { decoder, decoderTimeout, verifyDecoder, maxHeaderSize, logger } = this;
    return new Queue(this.dir, { decoder, decoderTimeout, verifyDecoder, maxHeaderSize, allowedSigners, logger });
  }

  static open(dir: string, options: QueueOptions = {}): Queue {
    return new Queue(dir, options);
  }

  /** Create a queue. Fails if dir exists. */
  static init(dir: string, options: { appendOnly?: boolean } & QueueOptions = {}): Queue {
    fs.mkdirSync(dir);
    fs.mkdirSync(path.join(dir, 'jobs'));
    const q = new Queue(dir, options);
    if (!options.appendOnly) {
      SeqFile.with(q.seqfilePath, { create: true }, () => {});
    }
    // A queue that `queue-init` reported made is there after a power cut: jobs/, nextseq and its
    // lock by the fsync of dir (SeqFile.write's, above; ours for an append-only queue, which has
    // no seqfile), dir itself by the fsync of its parent.
    if (options.appendOnly) fsyncDir(dir);
    fsyncDir(path.dirname(path.resolve(dir)));
    return q;
  }

  jobPath(filename: string): string {
    return this.jobsPrefix + filename;
  }

  /**
   * Lock the queue's seqfile (LockedError if another process holds it for more than a moment;
   * at once with `wait: false`).
   */
  lockSeqfile(options: { wait?: boolean } = {}): SeqFile {
    return SeqFile.lock(this.seqfilePath, { create: false, wait: options.wait });
  }

  /** Write a packet held in memory (header plus payload) into the queue. */
  writeBuffer(packet: Uint8Array): string {
    return writeJobSync(this.jobsDir, (fd) => writeAllSync(fd, packet));
  }

  /**
   * Store a packet (a stream, bytes, or any async iterable of bytes, such as preparePacket's
   * output) with the same guarantees as queue-write: temporary name, fsync, rename. Resolves to
   * the new job's file name. Nothing is decoded or validated.
   */
  write(packet: Readable | Uint8Array | AsyncIterable<Uint8Array>): Promise<string> {
    return writeJob(this.jobsDir, packet);
  }

  /**
   * The names in jobs/ that look like job files, in the directory's own order (readdir order,
   * which the reference keeps for ties; fs.readdirSync would sort them).
   */
  private listJobFiles(): string[] {
    const names: string[] = [];
    this.forEachJobFile((name) => names.push(name));
    return names;
  }

  /**
   * Call `fn` with the name of each job file, in directory order: the memory it takes does not
   * grow with the number of files (a place holding 100,000 tokens is read as a stream; io.ts).
   */
  forEachJobFile(fn: (name: string) => void): void {
    forEachDirName(this.jobsDir, (name) => {
      if (isJobFilename(name)) fn(name);
      else this.logger.debug('queue', () => `Ignoring file ${JSON.stringify(name)}`);
    });
  }

  /** Read one job file's header, through the decoder if there is one. */
  async readHeader(filename: string): Promise<PacketHeader> {
    const p = this.jobPath(filename);
    if (this.decoder !== undefined)
      return (await decoding()).readHeaderThroughDecoder(p, this.decoder, this.decoderTimeout, this.maxHeaderSize);
    return (await headers()).readHeaderFileSync(p, this.maxHeaderSize);
  }

  /**
   * Read the header of every job file. Files that can't be read or decoded are skipped and
   * logged at debug level, as the reference does: extra files never stop a queue.
   */
  async scan(options: ScanOptions = {}): Promise<JobEntry[]> {
    return (await headers()).readHeaders(this, this.listJobFiles(), options.onFailure);
  }

  /** Read the headers of these job files (unreadable ones left out), in the given order. */
  async readJobHeaders(names: string[]): Promise<JobEntry[]> {
    return (await headers()).readHeaders(this, names);
  }

  /**
   * Scan again, reading only the headers of files not in `known` (a previous scan, by file name).
   * The result is in directory order; files gone since are dropped, unreadable ones left out.
   */
  async rescan(known: ReadonlyMap<string, JobEntry>): Promise<Map<string, JobEntry>> {
    const names = this.listJobFiles();
    const fresh = names.filter((n) => !known.has(n));
    const read = new Map(fresh.length === 0 ? [] : (await this.readJobHeaders(fresh)).map((e) => [e.filename, e]));
    const out = new Map<string, JobEntry>();
    for (const n of names) {
      const e = known.get(n) ?? read.get(n);
      if (e) out.set(n, e);
    }
    return out;
  }

  /** Scan and sort by sequence number (ties in directory order). */
  async list(): Promise<JobEntry[]> {
    const jobs = await this.scan();
    return jobs.sort(compareBySeq);
  }

  /**
   * The job with this sequence number. As in the reference (and its manual), a lookup by number
   * fails with DuplicateSeqError when any two jobs in the queue share a number, and with
   * NotFoundError when none has this one.
   */
  async find(seq: bigint): Promise<JobEntry> {
    const jobs = await this.scan();
    const job = indexBySeq(jobs).get(seq);
    if (!job) throw new NotFoundError(`Job ${seq} not found in queue ${JSON.stringify(this.dir)}`);
    return job;
  }

  /**
   * Open a job file for reading its payload, to run it (through the decoder, if any: out of our
   * process group, as the job's command).
   */
  async openJob(filename: string): Promise<OpenJob> {
    const p = this.jobPath(filename);
    if (this.decoder !== undefined) {
      const decoded = await (await decoding()).openThroughDecoder(
        p,
        this.decoder,
        this.decoderTimeout,
        this.maxHeaderSize,
      );
      return {
        kind: 'decoded',
        header: decoded.header,
        payload: decoded.payload,
        decoded,
        close: () => decoded.abort(),
      };
    }
    return this.openPlainJob(filename);
  }

  /** A job of a queue without a decoder, opened: its file's descriptor, after the header. */
  async openPlainJob(filename: string): Promise<PlainOpenJob> {
    if (this.decoder !== undefined)
      throw new QueueError(`Queue ${JSON.stringify(this.dir)} has a decoder: its jobs are opened through it (openJob)`);
    const p = this.jobPath(filename);
    let head = nativeOpenHead(p, HEAD_READ);
    if (head?.header && head.payloadOffset - 30 <= this.maxHeaderSize /* after its 30-byte prefix */) {
      const fd = head.fd;
      return {
        kind: 'plain',
        header: head.header,
        payload: fd,
        payloadOffset: head.payloadOffset,
        close: () => closeQuietly(fd),
      };
    }
    if (head?.header) {
      // Read in C, but over our limit (one under HEAD_READ): refused below, as any reader refuses it.
      closeQuietly(head.fd);
      head = undefined;
    }
    const { readHeaderAndLengthSync } = await reading();
    const fd = head?.fd ?? openJobFile(p); // not through a link planted in jobs/ (untrusted.ts)
    try {
      const { header, length } = readHeaderAndLengthSync(fd, this.maxHeaderSize);
      return { kind: 'plain', header, payload: fd, payloadOffset: length, close: () => closeQuietly(fd) };
    } catch (err) {
      closeQuietly(fd);
      throw err;
    }
  }

  /**
   * A job file's payload as a stream. Through a decoder, the stream fails (with DecoderError)
   * if the decoder does not exit with status 0; with verifyDecoder, the call itself does, and
   * the stream reads the spooled output of a decoder that succeeded.
   */
  async openPayload(filename: string): Promise<Readable> {
    const p = this.jobPath(filename);
    if (this.decoder !== undefined) {
      const [{ checkedPayload, openThroughDecoder, spoolDecoded }, { fdStream, withSealCheck }] = await Promise.all([
        decoding(),
        packets(),
      ]);
      const decoded = await openThroughDecoder(p, this.decoder, this.decoderTimeout, this.maxHeaderSize);
      if (this.verifyDecoder)
        return withSealCheck(fdStream(await spoolDecoded(decoded, this.decoder), true), decoded.header.seal);
      return withSealCheck(checkedPayload(decoded, this.decoder), decoded.header.seal);
    }
    return (await (await packets()).readPacket({ path: p }, { maxHeaderSize: this.maxHeaderSize })).payload;
  }

  /** The jobs in sequence order (ties in directory order) or timestamp order, scanned once. */
  async *jobs(options: { order?: OrderBy } = {}): AsyncGenerator<QueuedJob> {
    const [entries, { metadataOf }] = await Promise.all([this.scan(), packets()]);
    entries.sort(options.order === 'timestamp' ? compareByTimestamp : compareBySeq);
    for (const e of entries) {
      yield {
        ...metadataOf(e.header),
        filename: e.filename,
        path: this.jobPath(e.filename),
        payload: () => this.openPayload(e.filename),
      };
    }
  }

  [Symbol.asyncIterator](): AsyncGenerator<QueuedJob> {
    return this.jobs();
  }

  /** A job's metadata and variables, by sequence number. */
  async info(seq: bigint): Promise<JobDetails> {
    const [{ filename, header }, { metadataOf }, { jobVariables, variablesRecord }] = await Promise.all([
      this.find(seq),
      packets(),
      import('./jobenv.js'),
    ]);
    const variables = variablesRecord(jobVariables(header, { queuedir: this.dir, filename }));
    return { ...metadataOf(header), filename, path: this.jobPath(filename), variables };
  }

  /** A job's payload, by sequence number. */
  async payload(seq: bigint): Promise<Readable> {
    return this.openPayload((await this.find(seq)).filename);
  }

  /** Move a job that may not run to refused/ with a note saying why (refused.ts); false if it was gone already. */
  refuse(filename: string, why: string): boolean {
    return refuseJobFile(this.dir, filename, why) !== undefined;
  }

  /** Finish the moves to refused/ that a power cut left half done (refused.ts); how many. */
  finishCutRefusals(): number {
    return finishCutRefusals(this.dir);
  }

  /** Delete a job file. */
  delete(filename: string): void {
    fs.unlinkSync(this.jobPath(filename));
  }

  getNext(): bigint {
    return SeqFile.with(this.seqfilePath, {}, (sf) => sf.read());
  }

  setNext(seq: bigint): void {
    SeqFile.with(this.seqfilePath, {}, (sf) => sf.write(seq));
  }

  /** Check that the directory looks like a queue; a one-line error otherwise. */
  assertExists(): void {
    let st: fs.Stats;
    try {
      st = fs.statSync(this.jobsDir);
    } catch (err) {
      throw new QueueError(`Cannot open queue ${JSON.stringify(this.dir)}: ${describeSystemError(err)}`, {
        cause: err,
      });
    }
    if (!st.isDirectory())
      throw new QueueError(`Cannot open queue ${JSON.stringify(this.dir)}: ${this.jobsDir} is not a directory`);
  }
}
