import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyFdSync, readExactSync } from '../src/io.js';
import { ShortReadError } from '../src/errors.js';
import { tempDir } from './helpers.js';

describe('io', () => {
  it('copies a descriptor to another from its current position, in chunks', () => {
    const dir = tempDir();
    const src = path.join(dir, 'src');
    const data = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < data.length; i++) data[i] = i % 251;
    fs.writeFileSync(src, data);
    const inFd = fs.openSync(src, 'r');
    const outFd = fs.openSync(path.join(dir, 'dst'), 'w');
    expect(readExactSync(inFd, 17)).toEqual(data.subarray(0, 17));
    expect(copyFdSync(inFd, outFd)).toBe(data.length - 17);
    fs.closeSync(inFd);
    fs.closeSync(outFd);
    expect(fs.readFileSync(path.join(dir, 'dst')).equals(data.subarray(17))).toBe(true);
  });

  it('readExactSync fails at end of file and reads large counts without preallocating them', () => {
    const dir = tempDir();
    const f = path.join(dir, 'small');
    fs.writeFileSync(f, 'abc');
    const fd = fs.openSync(f, 'r');
    expect(() => readExactSync(fd, 1 << 30)).toThrow(ShortReadError);
    fs.closeSync(fd);
  });
});
