/** `fspl net`'s command lines: parsed from spec.ts's grammar before anything is done. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FSPL_BIN } from '../helpers.js';
import { makeNet, runFspl } from '../net/helpers.js';

const NET = 'places: { a: {}, b: {} }\ntransitions: { copy: { in: a, out: b, run: [cat] } }\n';

describe('fspl net usage errors', () => {
  it('refuses a bad command line before acting: no token is put, nothing is printed on stdout', async () => {
    const { dir, file, net } = makeNet(NET);
    const said: Array<[string[], string]> = [
      [['--nope'], "unknown option '--nope' for net put"],
      [['--kye', 'k1'], "unknown option '--kye' for net put; did you mean '--key'?"],
      [['extra'], "unexpected argument 'extra' (PARAMS go after --)"],
    ];
    for (const [bad, message] of said) {
      const r = await runFspl(['net', 'put', file, 'a', ...bad], { input: 'x' });
      expect(r.status).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`error: ${message}\n\nFor more information try fspl net --help\n`);
    }
    expect(fs.readdirSync(path.join(dir, 'places', 'a', 'jobs'))).toEqual([]);
  });

  it('names a misspelt net command or option by its own name, with what was meant, and a missing argument by what it is', async () => {
    const { file } = makeNet(NET);
    const cases: Array<[string[], string]> = [
      [['net', 'rnu', file], "unknown net command 'rnu'; did you mean 'run'?"],
      [['net', 'run', file, '--poll-intervl', '3'], "unknown option '--poll-intervl' for net run; did you mean '--poll-interval'?"],
      [['net', 'run'], 'missing NET: the net file (YAML)'],
      [['net', 'put', file], 'missing PLACE: the place, by its name in the net file'],
      [['net', 'simulate', file], 'missing -n N: how many tokens to put into each source place'],
      [['net', 'status', file, 'extra'], "unexpected argument 'extra'"],
    ];
    for (const [args, message] of cases) {
      const r = await runFspl(args);
      expect([r.status, r.stderr], args.join(' ')).toEqual([2, `error: ${message}\n\nFor more information try fspl net --help\n`]);
    }
    // Flags still turn off as they always have, and the help still comes first.
    const r = await runFspl(['net', 'run', '--drain', '--no-progress', file]);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect((await runFspl(['net', 'run', file, '--bogus', '--help'])).status).toBe(0);
  });

  it('says a bad value on one line, and a bad log level with a pointer to --help', async () => {
    const { file } = makeNet(NET);
    const w = await runFspl(['net', 'run', file, '--workers', '0']);
    expect([w.status, w.stderr]).toEqual([2, "error: invalid --workers '0': give a whole number of at least 1\n"]);
    const l = await runFspl(['-l', 'loud', 'net', 'run', file, '--drain']);
    expect([l.status, l.stderr]).toEqual([2, "error: invalid log level 'loud': use trace, debug, info, warn, error, or 1 to 5\n\nFor more information try --help\n"]);
  });
});

describe('fspl net put on a terminal', () => {
  it('says on stderr that it reads the payload from the terminal, and how to end it; in a pipe, nothing', async () => {
    const { file, net } = makeNet(NET);
    // script(1) gives it a pseudo-terminal for stdin, and types what it is given: a line, then Ctrl-D.
    const cmd = [process.execPath, FSPL_BIN, 'net', 'put', file, 'a'].map((a) => `'${a}'`).join(' ');
    const r = spawnSync('script', ['-qfec', cmd, '/dev/null'], { input: 'hello\n\x04', encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("fspl net put: reading the token's payload from the terminal; end it with Ctrl-D (or give -i FILE, or pipe it in)\r\n");
    const piped = await runFspl(['net', 'put', file, 'a'], { input: 'x' });
    expect([piped.status, piped.stderr]).toEqual([0, '']);
    const seqs: bigint[] = [];
    for await (const t of net.tokens('a')) seqs.push(t.seq);
    const payloads = await Promise.all(seqs.map(async (n) => (await runFspl(['net', 'show', file, 'a', '--seq', String(n), '--payload'])).stdout));
    expect(payloads).toEqual(['hello\n', 'x']);
  });
});
