/**
 * src/sys/stamps.ts: the addon's batch of stats gives what fs.statSync gives, path for path, and
 * undefined where a stat fails, as the pure-Node fallback (FSPL_NO_NATIVE=1) does.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadNative } from '../../src/sys/native.js';
import { stampInto } from '../../src/sys/stamps.js';
import { tempDir } from '../helpers.js';

afterEach(() => vi.unstubAllEnvs());

/** stampInto's buffer read back, a stamp a path (undefined where the stat failed). */
function stampPaths(ps: string[]) {
  const b = stampInto(ps);
  return ps.map((_, i) =>
    Number.isNaN(b[i * 3]!) ? undefined : { ino: b[i * 3]!, mtimeMs: b[i * 3 + 1]!, ctimeMs: b[i * 3 + 2]! },
  );
}

function paths(): string[] {
  const d = tempDir();
  fs.mkdirSync(path.join(d, 'jobs'));
  fs.writeFileSync(path.join(d, 'nextseq'), '1\n');
  fs.symlinkSync('nextseq', path.join(d, 'link'));
  fs.writeFileSync(path.join(d, 'file'), '');
  return [
    path.join(d, 'jobs'),
    path.join(d, 'missing'),
    path.join(d, 'nextseq'),
    path.join(d, 'link'), // followed, as stat(2)
    path.join(d, 'file', 'under-a-file'), // ENOTDIR
    `${d}/${'x'.repeat(5000)}`, // longer than a path can be
  ];
}

function expected(p: string) {
  try {
    const st = fs.statSync(p);
    return { ino: st.ino, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
  } catch {
    return undefined;
  }
}

describe('stampInto', () => {
  for (const mode of ['native', 'fallback'] as const) {
    it(`gives each path's inode and times, or undefined (${mode})`, () => {
      if (mode === 'fallback') vi.stubEnv('FSPL_NO_NATIVE', '1');
      else vi.stubEnv('FSPL_NO_NATIVE', '');
      if (mode === 'native' && process.platform === 'linux' && process.env.CI === 'true')
        expect(loadNative()?.stamps).toBeTypeOf('function');
      const ps = paths();
      const got = stampPaths(ps);
      expect(got).toEqual(ps.map(expected));
      expect(got.map((s) => s === undefined)).toEqual([false, true, false, false, true, true]);
      // Many at once (the buffer grows), and none.
      const many = Array.from({ length: 500 }, (_, i) => ps[i % 3]!);
      expect(stampPaths(many)).toEqual(many.map(expected));
      expect(stampPaths([])).toEqual([]);
    });
  }
});
