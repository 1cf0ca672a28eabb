import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BadSeqfileError, LockedError, parseSeq, SeqFile, SeqOverflowError } from '../../src/lowlevel.js';
import { getSenderNext, setSenderNext, takeSenderSeq } from '../../src/packet/prepare.js';
import { parseSeqfileText } from '../../src/sys/seq-text.js';
import { tempDir } from '../helpers.js';

describe('parsing', () => {
  it('accepts what u64::from_str accepts', () => {
    expect(parseSeq('0')).toBe(0n);
    expect(parseSeq('+7')).toBe(7n);
    expect(parseSeq('007')).toBe(7n);
    expect(parseSeq('18446744073709551615')).toBe(18446744073709551615n);
    for (const bad of ['', '+', '-1', ' 1', '1.5', '0x1', '18446744073709551616', '1_000'])
      expect(parseSeq(bad)).toBeUndefined();
  });

  it('reads the first line of a seqfile, trimmed', () => {
    expect(parseSeqfileText('5')).toBe(5n);
    expect(parseSeqfileText(' 5\n')).toBe(5n);
    expect(parseSeqfileText('5\n6\n')).toBe(5n);
    expect(parseSeqfileText('\t5\r\n')).toBe(5n);
    expect(parseSeqfileText('\n5\n')).toBeUndefined();
    expect(parseSeqfileText('5 6\n')).toBeUndefined();
  });
});

describe('SeqFile', () => {
  it('creates a missing sender seqfile holding 1, then counts up', () => {
    const sf = path.join(tempDir(), 'seq');
    expect(getSenderNext(sf)).toBe(1n);
    expect(fs.readFileSync(sf, 'utf8')).toBe('1\n');
    expect(fs.existsSync(`${sf}.lock`)).toBe(true);
    expect(takeSenderSeq(sf)).toBe(1n);
    expect(takeSenderSeq(sf)).toBe(2n);
    expect(fs.readFileSync(sf, 'utf8')).toBe('3\n');
    expect(takeSenderSeq('-')).toBe(1n);
    setSenderNext(sf, 9007199254740993n);
    expect(takeSenderSeq(sf)).toBe(9007199254740993n);
    expect(fs.readFileSync(sf, 'utf8')).toBe('9007199254740994\n');
    expect(fs.existsSync(`${sf}.temp`)).toBe(false);
  });

  it('takes a link that leads nowhere as no seqfile (replaced by a new one), and one that leads to a file as there', () => {
    const dir = tempDir();
    const sf = path.join(dir, 'seq');
    fs.symlinkSync(path.join(dir, 'nowhere'), sf);
    expect(getSenderNext(sf)).toBe(1n);
    expect(fs.lstatSync(sf).isFile()).toBe(true);
    expect(fs.existsSync(path.join(dir, 'nowhere'))).toBe(false);
    const other = path.join(dir, 'other');
    fs.writeFileSync(other, '7\n');
    fs.rmSync(sf);
    fs.symlinkSync(other, sf);
    expect(() => getSenderNext(sf)).toThrow(/symbolic link/);
    expect(fs.readFileSync(other, 'utf8')).toBe('7\n');
  });

  it('refuses to wrap past 2^64-1 instead of going back to 0', () => {
    const sf = path.join(tempDir(), 'seq');
    setSenderNext(sf, 18446744073709551615n);
    expect(() => takeSenderSeq(sf)).toThrow(SeqOverflowError);
    expect(fs.readFileSync(sf, 'utf8')).toBe('18446744073709551615\n');
  });

  it('reports garbage as BadSeqfileError', () => {
    const sf = path.join(tempDir(), 'seq');
    fs.writeFileSync(sf, 'abc\n');
    expect(() => getSenderNext(sf)).toThrow(BadSeqfileError);
  });

  it('fails at once with LockedError while another process holds the lock (flock(1))', async () => {
    const sf = path.join(tempDir(), 'seq');
    fs.writeFileSync(sf, '4\n');
    const holder = spawn('flock', ['-x', `${sf}.lock`, '-c', 'echo locked; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    try {
      await new Promise((resolve) => holder.stdout!.once('data', resolve));
      expect(() => SeqFile.lock(sf)).toThrow(LockedError);
      expect(() => takeSenderSeq(sf)).toThrow(LockedError);
    } finally {
      process.kill(-holder.pid!, 'SIGKILL'); // the whole group: flock and the sleep holding the lock
    }
    await new Promise((resolve) => holder.once('close', resolve));
    expect(takeSenderSeq(sf)).toBe(4n);
  });

  it('is seen as locked by flock(1) while we hold it', () => {
    const sf = path.join(tempDir(), 'seq');
    SeqFile.with(sf, { create: true }, () => {
      const r = spawnSync('flock', ['-x', '-n', `${sf}.lock`, 'true']);
      expect(r.status).toBe(1);
    });
    expect(spawnSync('flock', ['-x', '-n', `${sf}.lock`, 'true']).status).toBe(0);
  });
});
