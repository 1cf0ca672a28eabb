/** Places: tokens bound for another host (outboxes) are sealed; the others are plain packets. */

import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { readPacket } from 'filespooler';
import { expect, test } from 'vitest';
import { Place } from '../../../src/net/place/place.js';
import { numberedName } from '../../../src/net/place/token.js';
import { makeHeader, writePacketSync } from '../../../src/packet/prepare.js';
import { isJobFilename } from '../../../src/queue/jobs.js';
import { SeqFile } from '../../../src/sys/seqfile.js';
import { netDir } from '../helpers.js';

function place(remote: boolean): Place {
  const dir = path.join(netDir(), 'p');
  const p = new Place(
    { name: 'p', dir, order: 'sequence', remote: remote ? { host: 'b', dir: '/x', sync: false } : undefined },
    'sequence',
  );
  p.init();
  return p;
}

for (const remote of [true, false]) {
  test(
    `a token staged in ${remote ? 'an outbox is sealed' : 'a local place is not sealed'}` +
      `, whatever its payload's sources`,
    async () => {
      const p = place(remote);
      const src = path.join(p.spec.dir, '..', 'src');
      fs.writeFileSync(src, Buffer.from('hello, '));
      const first = p.putNow({ env: [[Buffer.from('KEY'), Buffer.from('a')]], payload: { path: src } });
      // A second token from the first one's payload plus a file: sealed over both.
      const writers = SeqFile.lock(p.sendseqPath, { create: true });
      try {
        const tokenFile = path.join(p.queue.jobsDir, first.filename);
        fs.writeFileSync(src, Buffer.from('world'));
        const s = p.stage(writers, { payload: { tokens: [tokenFile, tokenFile] } }, 'test');
        fs.renameSync(s.temp, s.final);
        const pkt = await readPacket({ path: s.final });
        const chunks: Buffer[] = [];
        for await (const c of pkt.payload) chunks.push(c as Buffer);
        expect(Buffer.concat(chunks).toString()).toBe('hello, hello, ');
        if (remote) expect(pkt.header.seal).toEqual({ length: 14n, crc32: expect.any(Number) });
        else expect(pkt.header.seal).toBeUndefined();
      } finally {
        writers.release();
      }
    },
  );
}

/** A job file named as queue-write names it (fspl-UUID.fspl), or under the given name. */
function writeForeign(p: Place, seq: bigint, key: string, name = `fspl-${randomUUID()}.fspl`): string {
  const fd = fs.openSync(path.join(p.queue.jobsDir, name), 'w');
  try {
    writePacketSync(
      fd,
      makeHeader({ seq, cmd: { kind: 'Command', params: [], env: [[Buffer.from('KEY'), Buffer.from(key)]] } }),
    );
  } finally {
    fs.closeSync(fd);
  }
  return name;
}

test('net writers name tokens by their number; such names are still Filespooler job files', () => {
  const p = place(false);
  const a = p.putNow({});
  const b = p.putNow({});
  expect(a.filename).toMatch(/^fspl-00000000000000000001-[0-9a-f-]{36}\.fspl$/);
  expect(b.filename).toMatch(/^fspl-00000000000000000002-[0-9a-f-]{36}\.fspl$/);
  expect(numberedName(2n ** 64n - 1n, randomUUID())).toMatch(/^fspl-18446744073709551615-/);
  expect(isJobFilename(a.filename)).toBe(true);
});

test(
  'with a window, a place indexes only its lowest numbers, counts ' +
    'the rest, and brings them in as the indexed ones are consumed',
  async () => {
    const p = place(false);
    for (let i = 1; i <= 300; i++) p.putNow({ env: [[Buffer.from('KEY'), Buffer.from(`k${i}`)]] });
    // Tokens from other writers: named without their number, and one whose name lies about it.
    for (let i = 301; i <= 320; i++) writeForeign(p, BigInt(i), `k${i}`);
    writeForeign(p, 1000n, 'liar', `fspl-00000000000000000001-${randomUUID()}.fspl`);
    p.window = 50;
    await p.refresh(Date.now());
    expect(p.count).toBe(321);
    expect(p.tokens.size).toBeLessThanOrEqual(50);
    const consumed: bigint[] = [];
    let maxIndexed = 0;
    for (let round = 0; round < 1000 && p.count > 0; round++) {
      if (p.dirty) await p.refresh(Date.now());
      maxIndexed = Math.max(maxIndexed, p.tokens.size);
      const [head] = p.inOrder(1, () => false);
      expect(head, `round ${round}: nothing indexed while ${p.count} tokens wait`).toBeDefined();
      consumed.push(head!.seq);
      fs.unlinkSync(head!.path);
      p.forget(head!.filename);
    }
    // Every token once, in order (the liar by the number in its header, last).
    expect(consumed).toEqual([...Array.from({ length: 320 }, (_, i) => BigInt(i + 1)), 1000n]);
    expect(maxIndexed).toBeLessThanOrEqual(50);
  },
);

test('with a window, tokens below the next number cannot crowd out the ones to consume', async () => {
  const p = place(false);
  for (let i = 1; i <= 200; i++) writeForeign(p, BigInt(i), `late${i}`);
  for (let i = 201; i <= 210; i++) writeForeign(p, BigInt(i), `k${i}`);
  p.window = 20;
  await p.refresh(Date.now(), 201n); // 201: the consumer's next number
  expect(p.count).toBe(210);
  expect(p.inOrder(100, (t) => t.seq < 201n).map((t) => t.seq)).toEqual(
    Array.from({ length: 10 }, (_, i) => BigInt(201 + i)),
  );
});

test('a token a scan found before its writer adopted it is indexed and counted once', async () => {
  const p = place(false);
  const { seq, filename } = p.putNow({});
  await p.refresh(Date.now());
  const found = p.tokens.get(filename);
  expect(found).toBeDefined();
  expect(
    p.adopt(filename, makeHeader({ seq, cmd: { kind: 'Command', params: [], env: [] } }), Date.now()),
  ).toBeUndefined();
  expect(p.tokens.get(filename)).toBe(found);
  expect(p.count).toBe(1);
});

test('tokens written into a place whose window is full are counted, and indexed by a later scan', async () => {
  const p = place(false);
  p.window = 10;
  for (let i = 1; i <= 30; i++) {
    const { seq, filename } = p.putNow({});
    p.adopt(filename, makeHeader({ seq, cmd: { kind: 'Command', params: [], env: [] } }), Date.now());
  }
  expect(p.count).toBe(30);
  expect(p.tokens.size).toBe(10);
  const seen: bigint[] = [];
  while (p.count > 0) {
    if (p.dirty) await p.refresh(Date.now());
    const [head] = p.inOrder(1, () => false);
    seen.push(head!.seq);
    fs.unlinkSync(head!.path);
    p.forget(head!.filename);
  }
  expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => BigInt(i + 1)));
});

test('inOrder starts past the head it skipped last time; a token given back (unskip) is seen again', async () => {
  const p = place(false);
  for (let i = 1; i <= 20; i++) p.putNow({});
  await p.refresh(Date.now());
  const claimed = new Set<bigint>([1n, 2n, 3n, 5n]);
  const skip = (t: { seq: bigint }) => claimed.has(t.seq);
  expect(p.inOrder(3, skip).map((t) => t.seq)).toEqual([4n, 6n, 7n]);
  // More claimed, as a run's firings take them: still skipped, the answer as a full walk's.
  claimed.add(4n);
  claimed.add(6n);
  expect(p.inOrder(3, skip).map((t) => t.seq)).toEqual([7n, 8n, 9n]);
  // A claimed token consumed: gone from the index, and still not returned.
  p.forget([...p.tokens.values()].find((t) => t.seq === 1n)!.filename);
  expect(p.inOrder(2, skip).map((t) => t.seq)).toEqual([7n, 8n]);
  // A claim released: seen again once the caller says so.
  claimed.delete(3n);
  p.unskip();
  expect(p.inOrder(2, skip).map((t) => t.seq)).toEqual([3n, 7n]);
  // Another caller's skip: a walk from the head.
  expect(p.inOrder(2, () => false).map((t) => t.seq)).toEqual([2n, 3n]);
});
