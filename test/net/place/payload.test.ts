/**
 * A token's payload for JavaScript transitions (src/net/place/payload.ts): a small token read
 * whole, header and payload from one read (readSmallToken), a larger one streamed; and the header
 * that read gives back to an indexed token whose own was dropped (token.ts rememberHeader).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { payloadStream, readSmallToken } from '../../../src/net/place/payload.js';
import { IndexedToken, rememberHeader } from '../../../src/net/place/token.js';
import { readHeaderFileSync } from '../../../src/queue/job-headers.js';
import { makeNet } from '../helpers.js';

async function bytes(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** One token per payload in place a; their files, in the order put. */
async function tokenFiles(payloads: Buffer[]): Promise<string[]> {
  const { dir, net } = makeNet(`places: { a: {} }\ntransitions: {}\n`);
  for (const [i, p] of payloads.entries()) await net.put('a', p, { key: `k${i}`, env: { N: String(i) } });
  const jobs = path.join(dir, 'places/a/jobs');
  return fs
    .readdirSync(jobs)
    .filter((n) => n.endsWith('.fspl'))
    .sort()
    .map((n) => path.join(jobs, n));
}

describe('readSmallToken and payloadStream', () => {
  test('small tokens come whole from one read, larger ones are streamed, the bytes the same either way', async () => {
    // Around the 64 KiB a whole read takes (the file: a header of some tens of bytes, then the payload).
    const sizes = [0, 1, 100, 64 * 1024 - 200, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 300_000];
    const payloads = sizes.map((n, i) => Buffer.alloc(n, String.fromCharCode(97 + i)));
    const files = await tokenFiles(payloads);
    for (const [i, file] of files.entries()) {
      const size = fs.statSync(file).size;
      const whole = readSmallToken(file);
      if (size <= 64 * 1024) {
        expect(whole, `token of ${sizes[i]} bytes`).toBeDefined();
        expect(whole!.payload.equals(payloads[i]!)).toBe(true);
        expect(whole!.header).toEqual(readHeaderFileSync(file));
      } else {
        expect(whole, `token of ${sizes[i]} bytes`).toBeUndefined();
      }
      // Asked twice, the payload comes twice, in full.
      for (let k = 0; k < 2; k++) expect((await bytes(payloadStream(file))).equals(payloads[i]!)).toBe(true);
    }
  });

  test('a file cut short in its header is no small token, and streaming it reports the packet as bad', async () => {
    const [file] = await tokenFiles([Buffer.from('payload')]);
    fs.truncateSync(file!, 12);
    expect(readSmallToken(file!)).toBeUndefined();
    expect(() => payloadStream(file!)).toThrow();
  });

  test('a dropped header comes back from the read a firing makes anyway, with no read of its own', async () => {
    const [file] = await tokenFiles([Buffer.from('x')]);
    const header = readHeaderFileSync(file!);
    const tok = new IndexedToken('a', path.dirname(file!), path.basename(file!), header, Date.now());
    tok.dropHeader();
    rememberHeader(tok, readSmallToken(file!)!.header);
    fs.rmSync(file!); // a read now would fail
    expect(tok.header).toEqual(header);
  });
});
