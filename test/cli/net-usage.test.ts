/** `fspl net`'s command lines: parsed from spec.ts's grammar before anything is done. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeNet, runFspl } from '../net/helpers.js';

const NET = 'places: { a: {}, b: {} }\ntransitions: { copy: { in: a, out: b, run: [cat] } }\n';

describe('fspl net usage errors', () => {
  it('refuses a bad command line before acting: no token is put, nothing is printed on stdout', async () => {
    const { dir, file, net } = makeNet(NET);
    for (const bad of [['--nope'], ['extra']]) {
      const r = await runFspl(['net', 'put', file, 'a', ...bad], { input: 'x' });
      expect(r.status).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^error: Unknown argument: (nope|extra)\n\nFor more information try fspl net --help\n$/);
    }
    expect(fs.readdirSync(path.join(dir, 'places', 'a', 'jobs'))).toEqual([]);
  });

  it('says a bad value on one line, and a bad log level with a pointer to --help', async () => {
    const { file } = makeNet(NET);
    const w = await runFspl(['net', 'run', file, '--workers', '0']);
    expect([w.status, w.stderr]).toEqual([2, "error: invalid --workers '0': give a whole number of at least 1\n"]);
    const l = await runFspl(['-l', 'loud', 'net', 'run', file, '--drain']);
    expect([l.status, l.stderr]).toEqual([2, "error: invalid log level 'loud': use trace, debug, info, warn, error, or 1 to 5\n\nFor more information try --help\n"]);
  });
});
