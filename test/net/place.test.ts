/** Places: tokens bound for another host (outboxes) are sealed; the others are plain packets. */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { readPacket } from 'filespooler';
import { Place } from '../../src/net/place.js';
import { SeqFile } from '../../src/seqfile.js';
import { netDir } from './helpers.js';

function place(remote: boolean): Place {
  const dir = path.join(netDir(), 'p');
  const p = new Place({ name: 'p', dir, order: 'sequence', extra: remote ? { remote: { host: 'b', dir: '/x', sync: false } } : {} }, 'sequence');
  p.init();
  return p;
}

for (const remote of [true, false]) {
  test(`a token staged in ${remote ? 'an outbox is sealed' : 'a local place is not sealed'}, whatever its payload's sources`, async () => {
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
  });
}
