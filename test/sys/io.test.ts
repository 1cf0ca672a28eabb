import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forEachDirName, isEmptyDir, readUpToSync } from '../../src/sys/io.js';
import { loadNative } from '../../src/sys/native.js';
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

const names = (dir: string) => {
  const out: string[] = [];
  forEachDirName(dir, (n) => out.push(n));
  return out.sort();
};

describe('forEachDirName', () => {
  const saved = process.env.FSPL_NO_NATIVE;
  afterEach(() => {
    if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
    else process.env.FSPL_NO_NATIVE = saved;
  });
  const modes = loadNative()?.names ? ['native', 'pure Node'] : ['pure Node'];
  for (const mode of modes) {
    const set = () => {
      if (mode === 'native') delete process.env.FSPL_NO_NATIVE;
      else process.env.FSPL_NO_NATIVE = '1';
    };

    it(`${mode}: gives every name but . and .., dot files and directories too`, () => {
      set();
      const dir = tempDir();
      for (const n of ['a', '.hidden', 'fspl-x.fspl', 'é ü']) fs.writeFileSync(path.join(dir, n), '');
      fs.mkdirSync(path.join(dir, 'sub'));
      expect(names(dir)).toEqual(['.hidden', 'a', 'fspl-x.fspl', 'sub', 'é ü'].sort());
      expect(names(path.join(dir, 'sub'))).toEqual([]);
    });

    it(`${mode}: reads a directory of more names than one call takes, all of them`, () => {
      set();
      const dir = tempDir();
      const want = Array.from({ length: 4100 }, (_, i) => `f${i}`);
      for (const n of want) fs.writeFileSync(path.join(dir, n), '');
      expect(names(dir)).toEqual(want.sort());
    });

    it(`${mode}: isEmptyDir: true for no entry but . and .., false for one (a dot file too), throws on a missing one`, () => {
      set();
      const dir = tempDir();
      expect(isEmptyDir(dir)).toBe(true);
      fs.writeFileSync(path.join(dir, '.hidden'), '');
      expect(isEmptyDir(dir)).toBe(false);
      expect(() => isEmptyDir(path.join(dir, 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    });

    it(`${mode}: fails as Node does on a missing directory or a file`, () => {
      set();
      const dir = tempDir();
      fs.writeFileSync(path.join(dir, 'file'), '');
      expect(() => names(path.join(dir, 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
      expect(() => names(path.join(dir, 'file'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
    });
  }

  it.runIf(loadNative()?.names)(
    'the addon says null past its bound, and the errno of a directory it cannot open',
    () => {
      const dir = tempDir();
      for (const n of ['a', 'b', 'c']) fs.writeFileSync(path.join(dir, n), '');
      const b = loadNative()!;
      expect(b.names!(dir, 3)).toHaveLength(3);
      expect(b.names!(dir, 2)).toBeNull();
      expect(b.names!(path.join(dir, 'missing'), 3)).toBe(2); // ENOENT
      expect(b.names!(`/${'x'.repeat(5000)}`, 3)).toBe(36); // ENAMETOOLONG
    },
  );
});
