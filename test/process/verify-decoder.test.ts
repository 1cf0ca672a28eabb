/**
 * verifyDecoder (the CLI's --verify-decoder): a decoded job runs only once its decoder has exited
 * 0, on its spooled output. Library side: processQueue with a command and with a function,
 * processQueues, processFd (stdin-process -d), Queue.payload. The CLI and the gpg recipe are in
 * test/cli/verify-decoder.test.ts.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DecoderError,
  encodeHeader,
  JobFailedError,
  type PacketHeader,
  processFd,
  processQueue,
  processQueues,
  Queue,
} from '../../src/lowlevel.js';
import { tempDir } from '../helpers.js';

function packet(seq: bigint, payload: Buffer | string): Buffer {
  const h: PacketHeader = {
    seq,
    ctime: { secs: 1700000000n, nanos: 0 },
    cmd: { kind: 'Command', params: [], env: [] },
  };
  return Buffer.concat([encodeHeader(h), Buffer.from(payload)]);
}

/**
 * A queue holding job 1 (PAYLOAD), a marker the command makes as it starts, and its copy of its
 * stdin. `bad`: a decoder that prints the packet (PWNED and all), then exits 2, as gpg does for
 * a signature it can't check; `good`: one that prints it and exits 0 (with a note of its end).
 */
function setup(payload: Buffer | string = 'PWNED\n') {
  const dir = tempDir();
  const q = Queue.init(path.join(dir, 'q'));
  q.writeBuffer(packet(1n, payload));
  const marker = path.join(dir, 'started');
  const out = path.join(dir, 'out');
  const decoded = path.join(dir, 'decoder-done');
  // The command: says it started, copies its stdin, and says whether stdin is a regular file.
  const params = ['-c', `touch ${marker}; cat > ${out}; if [ -f /dev/stdin ]; then echo file > ${out}.kind; fi`];
  return {
    dir,
    q,
    marker,
    out,
    decoded,
    params,
    bad: 'cat; exit 2',
    good: `cat; touch ${decoded}`,
    open: (decoder: string, verifyDecoder = true) => Queue.open(q.dir, { decoder, verifyDecoder }),
  };
}

describe('verifyDecoder: processQueue with a command', () => {
  it('a decoder that prints the packet then exits 2: the command never starts, the job stays', async () => {
    const t = setup();
    const run = processQueue(t.open(t.bad), { command: 'sh', params: t.params });
    await expect(run).rejects.toThrow(JobFailedError);
    await expect(run).rejects.toThrow(/Decoder "cat; exit 2" exited with status 2/);
    expect(fs.existsSync(t.marker)).toBe(false);
    expect(t.q.getNext()).toBe(1n);
    expect((await t.q.list()).map((j) => j.header.seq)).toEqual([1n]);
  });

  it(
    'without it, the same command starts and reads PWNED ' + 'before the decoder fails (the streaming default)',
    async () => {
      const t = setup();
      await expect(processQueue(t.open(t.bad, false), { command: 'sh', params: t.params })).rejects.toThrow(
        /exited with status 2/,
      );
      expect(fs.readFileSync(t.out, 'utf8')).toBe('PWNED\n');
      expect(t.q.getNext()).toBe(1n);
    },
  );

  it('under onError delete, a failing decoder counts as a failure, as without it', async () => {
    const t = setup();
    const r = await processQueue(t.open(t.bad), { command: 'sh', params: t.params, onError: 'delete' });
    expect(r).toEqual({ processed: 1, succeeded: 0, failed: 1 });
    expect(fs.existsSync(t.marker)).toBe(false);
  });

  it(
    'a decoder killed by a signal fails likewise; one that gives ' +
      'no header runs nothing (the scan skips its file, as without it)',
    async () => {
      const t = setup();
      await expect(processQueue(t.open('cat; kill -9 $$'), { command: 'sh', params: t.params })).rejects.toThrow(
        /killed by signal SIGKILL/,
      );
      await expect(processQueue(t.open('head -c 10; exit 0'), { command: 'sh', params: t.params })).resolves.toEqual({
        processed: 0,
        succeeded: 0,
        failed: 0,
      });
      expect(fs.existsSync(t.marker)).toBe(false);
      expect(t.q.getNext()).toBe(1n);
    },
  );

  it(
    'a decoder that succeeds: the command gets exactly the decoded ' +
      'payload (5 MiB), from a regular file, after the decoder ended',
    async () => {
      const payload = randomBytes(5 << 20);
      const t = setup(payload);
      const params = ['-c', `test -e ${t.decoded} || exit 9; ${t.params[1]}`];
      expect(await processQueue(t.open(t.good), { command: 'sh', params })).toEqual({
        processed: 1,
        succeeded: 1,
        failed: 0,
      });
      expect(fs.readFileSync(t.out).equals(payload)).toBe(true);
      expect(fs.readFileSync(`${t.out}.kind`, 'utf8')).toBe('file\n');
      expect(t.q.getNext()).toBe(2n);
    },
  );

  it('a sealed payload cut by the decoder is refused before the command runs', async () => {
    const t = setup();
    const h: PacketHeader = {
      seq: 2n,
      ctime: { secs: 1700000000n, nanos: 0 },
      cmd: { kind: 'Command', params: [], env: [] },
      seal: { length: 100n, crc32: 0 },
    };
    t.q.setNext(2n);
    t.q.writeBuffer(Buffer.concat([encodeHeader(h), Buffer.from('short')]));
    await expect(processQueue(t.open('cat'), { command: 'sh', params: t.params, onError: 'leave' })).resolves.toEqual({
      processed: 1,
      succeeded: 0,
      failed: 1,
    });
    expect(fs.existsSync(t.marker)).toBe(false);
  });

  it("the job's timeout bounds a decoder that never exits: the job fails, nothing ran", async () => {
    const t = setup();
    const run = processQueue(t.open('cat; exec sleep 30'), { command: 'sh', params: t.params, timeout: 0.3 });
    await expect(run).rejects.toThrow(/did not finish within 0.3 s/);
    expect(fs.existsSync(t.marker)).toBe(false);
    expect(t.q.getNext()).toBe(1n);
  });

  it('interrupted while the decoder runs: the job stays, unrecorded, and nothing ran', async () => {
    const t = setup();
    const interrupt = new AbortController();
    setTimeout(() => interrupt.abort(), 200);
    const r = await processQueue(t.open('cat; exec sleep 30'), {
      command: 'sh',
      params: t.params,
      interrupt: interrupt.signal,
      signal: interrupt.signal,
    });
    expect(r).toEqual({ processed: 0, succeeded: 0, failed: 0 });
    expect(fs.existsSync(t.marker)).toBe(false);
    expect(t.q.getNext()).toBe(1n);
  });

  it('processQueues passes it to the queues it opens', async () => {
    const t = setup();
    const r = await processQueues([t.q.dir], { command: 'sh', params: t.params, decoder: t.bad, verifyDecoder: true });
    expect(r.queues[0]!.state).toBe('stopped');
    expect(fs.existsSync(t.marker)).toBe(false);
    expect(t.q.getNext()).toBe(1n);
  });
});

describe('verifyDecoder: a function executor', () => {
  it('is not called when the decoder fails; the job stays', async () => {
    const t = setup();
    let called = false;
    await expect(
      t.open(t.bad).process(async () => {
        called = true;
      }),
    ).rejects.toThrow(/exited with status 2/);
    expect(called).toBe(false);
    expect(t.q.getNext()).toBe(1n);
  });

  it('gets the spooled payload as a stream, only once the decoder has exited 0', async () => {
    const payload = randomBytes(5 << 20);
    const t = setup(payload);
    let got: Buffer | undefined;
    let decoderDone = false;
    const r = await t.open(t.good).process(async (job) => {
      decoderDone = fs.existsSync(t.decoded);
      const chunks: Buffer[] = [];
      for await (const c of job.payload) chunks.push(c as Buffer);
      got = Buffer.concat(chunks);
    });
    expect(r).toEqual({ processed: 1, succeeded: 1, failed: 0 });
    expect(decoderDone).toBe(true);
    expect(got!.equals(payload)).toBe(true);
  });
});

describe('verifyDecoder: Queue.payload', () => {
  it('rejects with DecoderError for a failing decoder, and gives the payload of a good one', async () => {
    const t = setup('hello\n');
    await expect(t.open(t.bad).payload(1n)).rejects.toThrow(DecoderError);
    const chunks: Buffer[] = [];
    for await (const c of await t.open(t.good).payload(1n)) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('hello\n');
  });
});

describe('processFd with a decoder (stdin-process -d)', () => {
  function stdinFile(t: ReturnType<typeof setup>): number {
    return fs.openSync(t.q.jobPath(fs.readdirSync(t.q.jobsDir)[0]!), 'r');
  }

  it('verifyDecoder: a failing decoder fails the job before the command starts', async () => {
    const t = setup();
    const fd = stdinFile(t);
    try {
      await expect(
        processFd(fd, { command: 'sh', params: t.params, decoder: t.bad, verifyDecoder: true }),
      ).rejects.toThrow(/Job 1 failed \(Decoder .* exited with status 2\)/);
    } finally {
      fs.closeSync(fd);
    }
    expect(fs.existsSync(t.marker)).toBe(false);
  });

  it('without verifyDecoder: the command reads the stream, and the decoder fails the job after it', async () => {
    const t = setup();
    const fd = stdinFile(t);
    try {
      await expect(processFd(fd, { command: 'sh', params: t.params, decoder: t.bad })).rejects.toThrow(
        /exited with status 2/,
      );
    } finally {
      fs.closeSync(fd);
    }
    expect(fs.readFileSync(t.out, 'utf8')).toBe('PWNED\n');
  });

  it('both ways, a good decoder gives the command exactly the payload (5 MiB)', async () => {
    const payload = randomBytes(5 << 20);
    for (const verifyDecoder of [false, true]) {
      const t = setup(payload);
      const fd = stdinFile(t);
      try {
        expect(await processFd(fd, { command: 'sh', params: t.params, decoder: t.good, verifyDecoder })).toBe(true);
      } finally {
        fs.closeSync(fd);
      }
      expect(fs.readFileSync(t.out).equals(payload)).toBe(true);
      expect(fs.existsSync(`${t.out}.kind`)).toBe(verifyDecoder); // spooled: a regular file; streamed: a pipe
    }
  });
});
