/**
 * Concurrent writers: 8 processes write 100 packets each into one queue at the same time, half
 * through the path `fspl queue-write` takes (a packet copied from a descriptor), half from
 * memory, while a reader keeps listing jobs/ and reading every job file it sees.
 *
 * Promise checked: all 800 arrive and decode, with nothing else left in jobs/; a reader never
 * sees an incomplete job file.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { decodeHeader } from '../../src/packet/codec.js';
import { readHeaderSync } from '../../src/packet/read.js';
import { Queue } from '../../src/queue/queue.js';
import { envFor, fspl, isJobName, libraryPath, lines, ls, record, rngFor, tempDir } from './common.js';

const WRITERS = 8;
const EACH = 100;

/** The payload of job `seq`: its size and bytes follow from the number, so it can be checked. */
function payloadOf(seq: number, sizes: number[]): Buffer {
  return Buffer.alloc(sizes[seq]!, `job ${seq};`);
}

const WORKER =
  `
import fs from 'node:fs';
import path from 'node:path';
const [lib, qdir, first, count, sizesFile, scratch] = process.argv.slice(2);
const { Queue, encodeHeader } = await import(lib);
const sizes = JSON.parse(fs.readFileSync(sizesFile, 'utf8'));
const q = Queue.open(qdir);
// Wait for the starting signal so that all writers really run at once.
while (!fs.existsSync(path.join(scratch, 'go'))) await new Promise((r) => setTimeout(r, 2));
for (let i = 0; i < Number(count); i++) {
  const seq = Number(first) + i;
  const header = encodeHeader({ seq: BigInt(seq), ctime: { secs: 1700000000n ` +
  `+ BigInt(seq), nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } });
  const packet = Buffer.concat([header, Buffer.alloc(sizes[seq], 'job ' + seq + ';')]);
  if (seq % 2 === 0) {
    q.writeBuffer(packet);
  } else {
    // As fspl queue-write does: copy from a descriptor.
    const f = path.join(scratch, 'in-' + seq);
    fs.writeFileSync(f, packet);
    const fd = fs.openSync(f, 'r');
    q.writeFromFd(fd);
    fs.closeSync(fd);
    fs.unlinkSync(f);
  }
}
`;

test(`${WRITERS} processes x ${EACH} packets into one queue at once: all arrive, nothing else left`, {
  timeout: 120_000,
}, async () => {
  const rng = rngFor('concurrent-writers');
  const dir = tempDir();
  const qdir = path.join(dir, 'q');
  const q = Queue.init(qdir);
  const total = WRITERS * EACH;
  const sizes = [
    0,
    ...Array.from({ length: total }, () => (rng.next() < 0.1 ? rng.int(65536, 300_000) : rng.int(0, 4096))),
  ];
  const sizesFile = path.join(dir, 'sizes.json');
  fs.writeFileSync(sizesFile, JSON.stringify(sizes));
  const worker = path.join(dir, 'writer.mjs');
  fs.writeFileSync(worker, WORKER);

  const exits = Array.from({ length: WRITERS }, (_, w) => {
    const scratch = path.join(dir, `w${w}`);
    fs.mkdirSync(scratch);
    return new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [worker, libraryPath(), qdir, String(w * EACH + 1), String(EACH), sizesFile, dir],
        {
          env: envFor(),
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('close', (code) => resolve({ code, stderr }));
    });
  });
  // Workers are started; once node has loaded in all of them, the signal releases them together.
  await new Promise((r) => setTimeout(r, 300));
  fs.writeFileSync(path.join(dir, 'go'), '');

  // Meanwhile, a reader: every job file it sees must read as a complete header.
  let done = false;
  let passes = 0;
  let filesRead = 0;
  let incomplete = 0;
  const all = Promise.all(exits).finally(() => (done = true));
  while (!done) {
    for (const n of ls(q.jobsDir).filter(isJobName)) {
      const fd = fs.openSync(q.jobPath(n), 'r');
      try {
        readHeaderSync(fd);
        filesRead++;
      } catch {
        incomplete++;
      } finally {
        fs.closeSync(fd);
      }
    }
    passes++;
    await new Promise((r) => setImmediate(r));
  }
  const results = await all;
  for (const r of results) expect(r.code, r.stderr).toBe(0);

  const names = ls(q.jobsDir);
  const others = names.filter((n) => !isJobName(n));
  const seqs = new Map<number, number>();
  let bad = 0;
  for (const n of names.filter(isJobName)) {
    const data = fs.readFileSync(q.jobPath(n));
    try {
      const { header, length } = decodeHeader(data);
      const seq = Number(header.seq);
      seqs.set(seq, (seqs.get(seq) ?? 0) + 1);
      if (!data.subarray(length).equals(payloadOf(seq, sizes))) bad++;
    } catch {
      bad++;
    }
  }
  // The CLI lists them all.
  const listing = await fspl(['queue-ls', '-q', qdir], { timeoutMs: 60_000 });
  expect(listing.code, listing.stderr).toBe(0);
  const missing = Array.from({ length: total }, (_, i) => i + 1).filter((s) => !seqs.has(s));
  record('concurrent-writers', rng.seed, {
    writers: WRITERS,
    packetsEach: EACH,
    arrived: seqs.size,
    missing: missing.length,
    duplicated: [...seqs.values()].filter((c) => c > 1).length,
    damaged: bad,
    otherFilesInJobs: others.length,
    readerPasses: passes,
    readerFilesRead: filesRead,
    readerSawIncompleteFile: incomplete,
    listedByQueueLs: lines(listing.stdout.toString()).length - 1,
  });
  expect(missing).toEqual([]);
  expect(names.filter(isJobName).length).toBe(total);
  expect(bad).toBe(0);
  expect(others).toEqual([]);
  expect(incomplete).toBe(0);
  expect(lines(listing.stdout.toString()).length).toBe(total + 1);
});
