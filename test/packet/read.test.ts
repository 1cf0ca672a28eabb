import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  encodeHeader,
  type PacketHeader,
  readHeaderFromStream,
  readHeaderSync,
  ShortReadError,
} from '../../src/lowlevel.js';
import { tempDir, VECTORS } from '../helpers.js';

const header: PacketHeader = {
  seq: 42n,
  ctime: { secs: 1700000000n, nanos: 5 },
  cmd: { kind: 'Command', params: [Buffer.from('x')], env: [] },
};

describe('readHeaderSync', () => {
  it('consumes exactly the header, leaving the descriptor at the payload', () => {
    const dir = tempDir();
    const file = path.join(dir, 'p.fspl');
    fs.writeFileSync(file, Buffer.concat([encodeHeader(header), Buffer.from('PAYLOAD')]));
    const fd = fs.openSync(file, 'r');
    try {
      expect(readHeaderSync(fd)).toEqual(header);
      const rest = Buffer.alloc(100);
      const n = fs.readSync(fd, rest, 0, 100, null);
      expect(rest.subarray(0, n).toString()).toBe('PAYLOAD');
    } finally {
      fs.closeSync(fd);
    }
  });

  it('reports a short file as ShortReadError', () => {
    const fd = fs.openSync(path.join(VECTORS, 'truncated-meta.fspl'), 'r');
    try {
      expect(() => readHeaderSync(fd)).toThrow(ShortReadError);
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe('readHeaderFromStream', () => {
  it('reads the header from chunks of any size and puts back the rest', async () => {
    const bytes = Buffer.concat([encodeHeader(header), Buffer.from('the payload')]);
    for (const size of [1, 3, 29, 30, 31, bytes.length]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
      const stream = Readable.from(chunks, { objectMode: false });
      expect(await readHeaderFromStream(stream)).toEqual(header);
      const rest: Buffer[] = [];
      for await (const c of stream) rest.push(c as Buffer);
      expect(Buffer.concat(rest).toString()).toBe('the payload');
    }
  });

  it('fails with ShortReadError when the stream ends early', async () => {
    const s = new PassThrough();
    s.end(encodeHeader(header).subarray(0, 40));
    await expect(readHeaderFromStream(s)).rejects.toThrow(ShortReadError);
  });
});
