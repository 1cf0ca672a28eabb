import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readUpToSync } from '../../src/sys/io.js';
import { tempDir } from '../helpers.js';

describe('io', () => {
  it('readUpToSync stops at end of file and reads large counts without preallocating them', () => {
    const dir = tempDir();
    const f = path.join(dir, 'small');
    fs.writeFileSync(f, 'abc');
    const fd = fs.openSync(f, 'r');
    expect(readUpToSync(fd, 1 << 30).toString()).toBe('abc');
    expect(readUpToSync(fd, 10).length).toBe(0);
    fs.closeSync(fd);
  });
});
