import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readExactSync } from '../src/io.js';
import { ShortReadError } from '../src/errors.js';
import { tempDir } from './helpers.js';

describe('io', () => {
  it('readExactSync fails at end of file and reads large counts without preallocating them', () => {
    const dir = tempDir();
    const f = path.join(dir, 'small');
    fs.writeFileSync(f, 'abc');
    const fd = fs.openSync(f, 'r');
    expect(() => readExactSync(fd, 1 << 30)).toThrow(ShortReadError);
    fs.closeSync(fd);
  });
});
