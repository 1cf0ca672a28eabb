/** decoder.ts: spoolDecoded (verifyDecoder's spool) and openThroughDecoder on a descriptor. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DecoderError, encodeHeader, openThroughDecoder, type PacketHeader, spoolDecoded } from '../../src/lowlevel.js';
import { tempDir } from '../helpers.js';

function jobFile(payload: string): string {
  const h: PacketHeader = {
    seq: 7n,
    ctime: { secs: 1700000000n, nanos: 0 },
    cmd: { kind: 'Command', params: [], env: [] },
  };
  const file = path.join(tempDir(), 'fspl-7.fspl');
  fs.writeFileSync(file, Buffer.concat([encodeHeader(h), Buffer.from(payload)]));
  return file;
}

describe('spoolDecoded', () => {
  it('gives a nameless 0600 regular file holding the payload, its offset at the start', async () => {
    const decoded = await openThroughDecoder(jobFile('the payload\n'), 'cat');
    expect(decoded.header.seq).toBe(7n);
    const fd = await spoolDecoded(decoded, 'cat');
    try {
      const st = fs.fstatSync(fd);
      expect([st.isFile(), st.nlink, st.mode & 0o777, st.size]).toEqual([true, 0, 0o600, 12]);
      const buf = Buffer.alloc(64);
      // from the current offset
      expect(buf.subarray(0, fs.readSync(fd, buf, 0, 64, null)).toString()).toBe('the payload\n');
    } finally {
      fs.closeSync(fd);
    }
  });

  it('rejects with DecoderError when the decoder exits non-zero after printing everything', async () => {
    const decoded = await openThroughDecoder(jobFile('PWNED\n'), 'cat; exit 2');
    await expect(spoolDecoded(decoded, 'cat; exit 2')).rejects.toThrow(DecoderError);
  });

  it('stops the decoder and rejects with the reason when its signal aborts', async () => {
    const decoded = await openThroughDecoder(jobFile('x'), 'cat; exec sleep 30');
    const aborts = new AbortController();
    setTimeout(() => aborts.abort(new Error('enough')), 100);
    await expect(spoolDecoded(decoded, 'cat; exec sleep 30', aborts.signal)).rejects.toThrow('enough');
    expect((await decoded.exited).signal).toBe('SIGTERM');
  });
});

describe('openThroughDecoder on a descriptor', () => {
  it('reads the packet the decoder makes of it, and leaves the descriptor to its owner', async () => {
    const fd = fs.openSync(jobFile('abc'), 'r');
    try {
      const decoded = await openThroughDecoder(fd, 'cat');
      const spool = await spoolDecoded(decoded, 'cat');
      expect(fs.fstatSync(spool).size).toBe(3);
      fs.closeSync(spool);
      expect(fs.fstatSync(fd).isFile()).toBe(true); // still open
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe('a decoder is stopped as a group (as Filespooler 1.2.4)', () => {
  /** The processes whose command line is exactly `sleep N` (a duration no other test uses). */
  const sleeping = (n: number) =>
    fs
      .readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return fs.readFileSync(`/proc/${d}/cmdline`, 'utf8') === `sleep\0${n}\0`;
        } catch {
          return false;
        }
      });

  it('a pipeline that would outlive the job is killed with its shell when the decoder is dropped', async () => {
    // The shell's pipeline keeps the output open: dropped before its end, the whole group goes.
    // Durations of this run alone: a stray pipeline of another run is not counted.
    const n = 40_000 + Math.floor(Math.random() * 20_000);
    const decoder = `cat; sleep ${n} | sleep ${n + 1}`;
    const decoded = await openThroughDecoder(jobFile('x'), decoder);
    // Both sides of the pipeline started (a loaded machine may take seconds to exec them).
    for (let i = 0; i < 500 && (sleeping(n).length === 0 || sleeping(n + 1).length === 0); i++)
      await new Promise((r) => setTimeout(r, 20));
    try {
      expect(sleeping(n)).toHaveLength(1);
    } finally {
      decoded.abort();
    }
    await decoded.exited;
    for (let i = 0; i < 100 && sleeping(n).length + sleeping(n + 1).length > 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect([sleeping(n), sleeping(n + 1)]).toEqual([[], []]);
  });
});
