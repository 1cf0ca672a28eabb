/**
 * The library as a user sees it: only the package's public exports (imported by its own name),
 * no internals.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import * as main from 'filespooler';
import {
  DecoderError,
  decodeHeader,
  encodeHeader,
  type JobContext,
  JobFailedError,
  LockedError,
  type ProcessEvent,
  preparePacket,
  Queue,
  readPacket,
} from 'filespooler';
import * as lowlevel from 'filespooler/lowlevel';
import { FileLock } from 'filespooler/lowlevel';
import * as netTools from 'filespooler/net';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';

async function bytesOf(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

function newQueue(): { q: Queue; dir: string; seqfile: string } {
  const dir = tempDir();
  return { q: Queue.init(path.join(dir, 'q')), dir, seqfile: path.join(dir, 'seq') };
}

async function fill(q: Queue, seqfile: string, bodies: string[]): Promise<void> {
  for (const b of bodies) await q.write(preparePacket({ seqfile, payload: Buffer.from(b) }));
}

describe('preparePacket and readPacket', () => {
  it('make and read a packet through a stream, with the exact header bytes', async () => {
    const ctime = { secs: 1_700_000_000n, nanos: 5 };
    const stream = preparePacket({
      seq: 9n,
      ctime,
      params: ['a', Buffer.from([0xff])],
      env: [['K', 'v']],
      payload: Readable.from([Buffer.from('pay'), Buffer.from('load')]),
    });
    const all = await bytesOf(stream);
    const { header, length } = decodeHeader(all);
    expect(all.subarray(0, length)).toEqual(encodeHeader(header));
    expect(all.subarray(length).toString()).toBe('payload');
    const p = await readPacket(Readable.from([all.subarray(0, 7), all.subarray(7)]));
    expect(p.seq).toBe(9n);
    expect(p.ctime).toEqual(ctime);
    expect(p.kind).toBe('Command');
    expect(p.params.map((x) => Buffer.from(x).toString('hex'))).toEqual(['61', 'ff']);
    expect(p.env.map(([k, v]) => `${k}=${v}`)).toEqual(['K=v']);
    expect(await text(p.payload)).toBe('payload');
  });

  it('take numbers from a seqfile in order, and read from paths, buffers and descriptors', async () => {
    const dir = tempDir();
    const seqfile = path.join(dir, 'seq');
    const files = [0, 1, 2].map((i) => path.join(dir, `p${i}`));
    for (const f of files) fs.writeFileSync(f, await bytesOf(preparePacket({ seqfile, kind: 'NOP' })));
    expect((await readPacket({ path: files[2]! })).seq).toBe(3n);
    expect((await readPacket(fs.readFileSync(files[1]!))).seq).toBe(2n);
    const fd = fs.openSync(files[0]!, 'r');
    try {
      const p = await readPacket({ fd });
      expect([p.seq, p.kind]).toEqual([1n, 'NOP']);
      expect((await bytesOf(p.payload)).length).toBe(0);
    } finally {
      try {
        fs.closeSync(fd);
      } catch {
        /* closed by the stream */
      }
    }
    expect(fs.readFileSync(seqfile, 'utf8').trim()).toBe('4');
  });

  it('open a payload file before taking a number, so a bad path uses none up', () => {
    const dir = tempDir();
    const seqfile = path.join(dir, 'seq');
    expect(() => preparePacket({ seqfile, payload: { path: path.join(dir, 'missing') } })).toThrow(/ENOENT/);
    expect(fs.existsSync(seqfile)).toBe(false);
  });

  it('take an fs.ReadStream as a stream (not as a path), and refuse a directory before taking a number', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'body');
    fs.writeFileSync(file, '0123456789');
    const p = await readPacket(preparePacket({ seq: 1n, payload: fs.createReadStream(file, { start: 5 }) }));
    expect(await text(p.payload)).toBe('56789');
    const seqfile = path.join(dir, 'seq');
    expect(() => preparePacket({ seqfile, payload: { path: dir } })).toThrow(/EISDIR/);
    expect(fs.existsSync(seqfile)).toBe(false);
  });

  it('give a byte stream (not object mode) for a packet read from bytes', async () => {
    const p = await readPacket(await bytesOf(preparePacket({ seq: 1n, payload: Buffer.from('abcdef') })));
    expect(p.payload.readableObjectMode).toBe(false);
    await new Promise((r) => p.payload.once('readable', r));
    expect(String(p.payload.read(2))).toBe('ab');
  });

  it('reject damaged packets with typed errors', async () => {
    await expect(readPacket(Buffer.from('*FILESPOOLER nope nope nope nope'))).rejects.toMatchObject({
      code: 'ERR_BAD_PACKET',
    });
    await expect(readPacket(Readable.from([Buffer.from('*FILE')]))).rejects.toMatchObject({ code: 'ERR_SHORT_READ' });
  });
});

describe('Queue', () => {
  it('writes streams atomically, iterates in sequence and timestamp order, gives info and payloads', async () => {
    const { q } = newQueue();
    // Sequence numbers given out of creation order.
    const specs: Array<[bigint, bigint]> = [
      [3n, 100n],
      [1n, 300n],
      [2n, 200n],
    ];
    for (const [seq, secs] of specs) {
      await q.write(
        preparePacket({ seq, ctime: { secs, nanos: 0 }, params: [`p${seq}`], payload: Readable.from([`body ${seq}`]) }),
      );
    }
    expect(fs.readdirSync(q.jobsDir).every((n) => /^fspl-[0-9a-f-]{36}\.fspl$/.test(n))).toBe(true);
    const seqs: bigint[] = [];
    for await (const job of q) seqs.push(job.seq);
    expect(seqs).toEqual([1n, 2n, 3n]);
    const byTime: bigint[] = [];
    for await (const job of q.jobs({ order: 'timestamp' })) {
      byTime.push(job.seq);
      expect(await text(await job.payload())).toBe(`body ${job.seq}`);
    }
    expect(byTime).toEqual([3n, 2n, 1n]);
    const info = await q.info(2n);
    expect(info.variables.FSPL_PARAM_1).toBe('p2');
    expect(info.variables.FSPL_JOB_FULLPATH).toBe(info.path);
    expect(await text(await q.payload(3n))).toBe('body 3');
    await expect(q.info(7n)).rejects.toMatchObject({ code: 'ERR_NOT_FOUND' });
    q.setNext(2n);
    expect(q.getNext()).toBe(2n);
  });

  it('leaves nothing behind when the packet stream fails midway', async () => {
    const { q } = newQueue();
    async function* broken() {
      yield Buffer.alloc(100_000);
      throw new Error('connection lost');
    }
    await expect(q.write(Readable.from(broken()))).rejects.toThrow('connection lost');
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
  });

  it('never commits a packet cut short by a file size limit', () => {
    const { q } = newQueue();
    const script = path.join(tempDir(), 'write.mjs');
    fs.writeFileSync(
      script,
      `import { Queue, preparePacket } from ${JSON.stringify(path.resolve('dist/index.js'))};
       import { Readable } from 'node:stream';
       const q = Queue.open(process.argv[2]);
       try {
         await q.write(preparePacket({ seq: 1n, payload: ` +
        `Readable.from([Buffer.alloc(60 * 1024), Buffer.alloc(60 * 1024)]) }));
         console.log('stored');
       } catch (err) { console.log(err.code); }`,
    );
    // 100 blocks of 1 KiB: the second 60 KiB chunk is cut short, then the next write fails.
    const out = execFileSync(
      'sh',
      ['-c', 'trap "" XFSZ; ulimit -f 100; exec "$0" "$@"', process.execPath, script, q.dir],
      { encoding: 'utf8' },
    );
    expect(out.trim()).toBe('EFBIG');
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
  });

  it('reads gzipped jobs through a decoder, and a failing decoder fails the payload stream', async () => {
    const { q, seqfile } = newQueue();
    const raw = path.join(tempDir(), 'raw');
    fs.writeFileSync(raw, await bytesOf(preparePacket({ seqfile, payload: Buffer.from('zipped body') })));
    const gz = execFileSync('gzip', ['-c', raw]);
    fs.writeFileSync(path.join(q.jobsDir, 'fspl-00000000-0000-4000-8000-000000000001.fspl'), gz);
    const dq = Queue.open(q.dir, { decoder: 'zcat' });
    expect(await text(await dq.payload(1n))).toBe('zipped body');
    const failing = Queue.open(q.dir, { decoder: 'zcat; exit 3' });
    await expect(text(await failing.payload(1n))).rejects.toBeInstanceOf(DecoderError);
  });

  it('refuses a second processor with LockedError', async () => {
    const { q } = newQueue();
    const lock = FileLock.acquire(path.join(q.dir, 'nextseq.lock'));
    try {
      await expect(q.process(async () => {})).rejects.toBeInstanceOf(LockedError);
    } finally {
      lock.release();
    }
  });
});

describe('Queue.process with commands, several queues at once', () => {
  it('runs them side by side (one through the native addon at a time, the others through child_process)', async () => {
    const queues = await Promise.all(
      [0, 1, 2, 3, 4].map(async () => {
        const { q, seqfile } = newQueue();
        await fill(q, seqfile, ['a', 'b']);
        return q;
      }),
    );
    const summaries = await Promise.all(queues.map((q) => q.process(['sh', '-c', 'sleep 0.1; cat > /dev/null'])));
    expect(summaries).toEqual(queues.map(() => ({ processed: 2, succeeded: 2, failed: 0 })));
    expect(queues.map((q) => fs.readdirSync(q.jobsDir).length)).toEqual([0, 0, 0, 0, 0]);
  });
});

describe('Queue.process with a JS function', () => {
  const failOn3 = (seen: bigint[]) => async (job: JobContext) => {
    seen.push(job.seq);
    expect(await text(job.payload)).toBe(`job ${job.seq}`);
    if (job.seq === 3n) throw new Error('boom');
  };

  async function queueOf5() {
    const { q, seqfile } = newQueue();
    await fill(q, seqfile, ['job 1', 'job 2', 'job 3', 'job 4', 'job 5']);
    return q;
  }

  it('retry: stops at the failing job, which stays and runs again next time', async () => {
    const q = await queueOf5();
    const seen: bigint[] = [];
    const err = await q.process(failOn3(seen)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobFailedError);
    expect((err as JobFailedError).message).toMatch(/Job 3 failed \(function failed: boom\)/);
    expect(seen).toEqual([1n, 2n, 3n]);
    expect(q.getNext()).toBe(3n);
    expect(fs.readdirSync(q.jobsDir)).toHaveLength(3);
    const again: bigint[] = [];
    await expect(q.process(failOn3(again))).rejects.toBeInstanceOf(JobFailedError);
    expect(again).toEqual([3n]);
  });

  it('delete: the failing job is deleted and processing goes on', async () => {
    const q = await queueOf5();
    const seen: bigint[] = [];
    expect(await q.process(failOn3(seen), { onError: 'delete' })).toEqual({ processed: 5, succeeded: 4, failed: 1 });
    expect(seen).toEqual([1n, 2n, 3n, 4n, 5n]);
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
    expect(q.getNext()).toBe(6n);
  });

  it('leave: the failing job stays in place, the queue moves past it', async () => {
    const q = await queueOf5();
    const seen: bigint[] = [];
    expect(await q.process(failOn3(seen), { onError: 'leave' })).toEqual({ processed: 5, succeeded: 4, failed: 1 });
    const left: bigint[] = [];
    for await (const j of q) left.push(j.seq);
    expect(left).toEqual([3n]);
    expect(q.getNext()).toBe(6n);
  });

  it('NOP and Fail packets decide themselves; the function never sees them', async () => {
    const { q, seqfile } = newQueue();
    await q.write(preparePacket({ seqfile, kind: 'NOP' }));
    await q.write(preparePacket({ seqfile, kind: 'Fail' }));
    await q.write(preparePacket({ seqfile }));
    const seen: bigint[] = [];
    const summary = await q.process(async (j) => void seen.push(j.seq), { onError: 'leave' });
    expect(summary).toEqual({ processed: 3, succeeded: 2, failed: 1 });
    expect(seen).toEqual([3n]);
  });

  it('a timeout aborts the job signal and counts as a failure', async () => {
    const { q, seqfile } = newQueue();
    await fill(q, seqfile, ['slow']);
    const err = await q
      .process((job) => new Promise((resolve) => job.signal.addEventListener('abort', resolve)), { timeout: 0.2 })
      .catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/Job 1 failed \(function timed out\)/);
    expect(q.getNext()).toBe(1n);
  });

  it('stops between jobs when the signal aborts, and reports events', async () => {
    const q = await queueOf5();
    const stop = new AbortController();
    const events: ProcessEvent[] = [];
    const summary = await q.process(
      async (job) => {
        if (job.seq === 2n) stop.abort();
      },
      { signal: stop.signal, onEvent: (e) => events.push(e) },
    );
    expect(summary.processed).toBe(2);
    expect(q.getNext()).toBe(3n);
    expect(events[0]).toEqual({ type: 'scan', waiting: 5 });
    expect(events.filter((e) => e.type === 'end').map((e) => (e as { seq: bigint }).seq)).toEqual([1n, 2n]);
  });

  it("reports 'end' once the job is recorded, and survives a listener that throws", async () => {
    const q = await queueOf5();
    const nextAtEnd: bigint[] = [];
    const summary = await q.process(async () => {}, {
      maxJobs: 2,
      onEvent: (e) => {
        // (q.getNext() would need the lock the run holds: read the file.)
        if (e.type === 'end') nextAtEnd.push(BigInt(fs.readFileSync(path.join(q.dir, 'nextseq'), 'utf8').trim()));
        throw new Error('listener bug');
      },
    });
    expect(summary.processed).toBe(2);
    expect(nextAtEnd).toEqual([2n, 3n]);
  });

  it('streams a payload far larger than it would want in memory', async () => {
    const { q } = newQueue();
    const size = 512 * 1024 * 1024;
    const chunk = Buffer.alloc(1 << 20, 7);
    async function* body() {
      for (let sent = 0; sent < size; sent += chunk.length) yield chunk;
    }
    await q.write(preparePacket({ seq: 1n, payload: Readable.from(body()) }));
    let peak = 0;
    const sample = () => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    };
    const timer = setInterval(sample, 20);
    let total = 0;
    try {
      await q.process(async (job) => {
        for await (const c of job.payload) {
          total += (c as Buffer).length;
          sample();
        }
      });
    } finally {
      clearInterval(timer);
    }
    expect(total).toBe(size);
    // Buffers in flight (plus those the garbage collector has not freed yet: about 33 MiB when
    // measured alone) stay far below the 512 MiB payload.
    expect(peak).toBeLessThan(128 * 1024 * 1024);
  });

  it('reads payloads through a decoder', async () => {
    const { q, seqfile } = newQueue();
    for (const body of ['first', 'second']) {
      const raw = path.join(tempDir(), 'raw');
      fs.writeFileSync(raw, await bytesOf(preparePacket({ seqfile, payload: Buffer.from(body) })));
      fs.writeFileSync(path.join(q.jobsDir, `fspl-${body}.fspl`), execFileSync('gzip', ['-c', raw]));
    }
    const got: string[] = [];
    await Queue.open(q.dir, { decoder: 'zcat' }).process(async (j) => void got.push(await text(j.payload)));
    expect(got).toEqual(['first', 'second']);
  });
});

describe('the entry points', () => {
  // The run-time names of each entry (types are checked by test/api/consumer.ts): the main entry
  // a newcomer reads in one screen, the operator's tooling for nets apart, lowlevel a superset.
  const MAIN = [
    'BadPacketError',
    'BadSeqfileError',
    'DecoderError',
    'DuplicateSeqError',
    'ExecError',
    'ExecTooLargeError',
    'FsplError',
    'HeaderTooLargeError',
    'JobFailedError',
    'LockedError',
    'Net',
    'NetError',
    'NetFileError',
    'NetRequestError',
    'NotFoundError',
    'PayloadSealError',
    'Queue',
    'QueueError',
    'SeqOverflowError',
    'ShortReadError',
    'UnknownNameError',
    'UntrustedFileError',
    'createLogger',
    'decodeHeader',
    'defineNet',
    'encodeHeader',
    'makeHeader',
    'metadataOf',
    'parseNetText',
    'preparePacket',
    'processQueues',
    'queueSendStatus',
    'queueStatus',
    'readPacket',
    'SendError',
    'DestinationError',
    'ReceiveError',
    'ReceiveRefusedError',
    'sendQueue',
    'parseDestination',
    'AllowedSigners',
    'SignatureError',
    'verifyPacket',
    'OUTCOME_WORDS',
    'RetryDueError',
    'retryFailedJobs',
  ];
  const NET = [
    'RateWindow',
    'TransitionMonitor',
    'allocateWorkers',
    'describeRemoteLeftover',
    'dotToSvg',
    'hostOf',
    'hostView',
    'liveDotState',
    'loadNetFile',
    'lowerBound',
    'netMetricFamilies',
    'netMetricsText',
    'netStatusJson',
    'parseService',
    'pauseText',
    'placeTokens',
    'serveNet',
    'simulate',
    'transitionDetail',
  ];

  it('filespooler holds packets, queues, nets and errors, and no operator tooling', () => {
    expect(Object.keys(main).sort()).toEqual([...MAIN].sort());
  });

  it('filespooler/net holds the operator tooling', () => {
    expect(Object.keys(netTools).sort()).toEqual([...NET].sort());
    for (const name of NET) expect(typeof (netTools as Record<string, unknown>)[name], name).toBe('function');
  });

  it('filespooler/lowlevel holds everything of filespooler, the same objects, and more', () => {
    for (const name of MAIN)
      expect((lowlevel as Record<string, unknown>)[name], name).toBe((main as Record<string, unknown>)[name]);
    expect(Object.keys(lowlevel).length).toBeGreaterThan(MAIN.length + 50);
  });
});
