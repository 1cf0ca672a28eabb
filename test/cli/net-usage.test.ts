/** `fspl net`'s command lines: parsed from spec.ts's grammar before anything is done. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FSPL_BIN } from '../helpers.js';
import { makeNet, netDir, runFspl } from '../net/helpers.js';

const NET = 'places: { a: {}, b: {} }\ntransitions: { copy: { in: a, out: b, run: [cat] } }\n';

describe('fspl net usage errors', () => {
  it('refuses a bad command line before acting: no token is put, nothing is printed on stdout', async () => {
    const { dir, file } = makeNet(NET);
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

  it(
    'names a misspelt net command or option by its own name, ' +
      'with what was meant, and a missing argument by what it is',
    async () => {
      const { file } = makeNet(NET);
      const cases: Array<[string[], string]> = [
        [['net', 'rnu', file], "unknown net command 'rnu'; did you mean 'run'?"],
        [
          ['net', 'run', file, '--poll-intervl', '3'],
          "unknown option '--poll-intervl' for net run; did you mean '--poll-interval'?",
        ],
        [['net', 'run'], 'missing NET: the net file (YAML)'],
        [['net', 'put', file], 'missing PLACE: the place, by its name in the net file'],
        [['net', 'simulate', file], 'missing -n N: how many tokens to put into each source place'],
        [['net', 'status', file, 'extra'], "unexpected argument 'extra'"],
      ];
      for (const [args, message] of cases) {
        const r = await runFspl(args);
        expect([r.status, r.stderr], args.join(' ')).toEqual([
          2,
          `error: ${message}\n\nFor more information try fspl net --help\n`,
        ]);
      }
      // Flags still turn off as they always have, and the help still comes first.
      const r = await runFspl(['net', 'run', '--drain', '--no-progress', file]);
      expect([r.status, r.stderr]).toEqual([0, '']);
      expect((await runFspl(['net', 'run', file, '--bogus', '--help'])).status).toBe(0);
    },
  );

  it('net put --no-wait: a full place fails at once with exit 3, and the token is not put', async () => {
    const { dir, file } = makeNet(
      'places: { a: { capacity: 1 }, b: {} }\ntransitions: { copy: { in: a, out: b, run: [cat] } }\n',
    );
    const first = await runFspl(['net', 'put', file, 'a', '--no-wait'], { input: 'x' });
    expect([first.status, first.stderr]).toEqual([0, '']);
    const full = await runFspl(['net', 'put', file, 'a', '--no-wait'], { input: 'y' });
    expect([full.status, full.stderr]).toEqual([3, 'Error: place a is full\n']);
    expect(fs.readdirSync(path.join(dir, 'places', 'a', 'jobs')).filter((n) => n.startsWith('fspl-'))).toHaveLength(1);
  });

  it('says a bad value on one line, and a bad log level with a pointer to --help', async () => {
    const { file } = makeNet(NET);
    const w = await runFspl(['net', 'run', file, '--workers', '0']);
    expect([w.status, w.stderr]).toEqual([2, "error: invalid --workers '0': give a whole number of at least 1\n"]);
    const l = await runFspl(['-l', 'loud', 'net', 'run', file, '--drain']);
    expect([l.status, l.stderr]).toEqual([
      2,
      "error: invalid log level 'loud': use trace, debug, info, warn, error, or 1 to 5\n" +
        '\nFor more information try --help\n',
    ]);
  });
});

describe('fspl net: a bad name exits 2 in every subcommand', () => {
  const ONE_HOST =
    'places: { inbox: {}, done: {}, failed: {} }\ntransitions:\n' +
    '  work: { in: inbox, out: done, error: failed, run: [cat] }\n';
  const TWO_HOSTS =
    'hosts: { alpha: {}, beta: {} }\nplaces:\n  inbox: { host: alpha }\n  done: { host: beta }\n' +
    'transitions:\n  work: { host: alpha, in: inbox, out: done, run: [cat] }\n';

  it(
    'an unknown place, transition, token or host: one line, ' + 'with the name probably meant, exit 2, nothing moved',
    async () => {
      const { dir, file } = makeNet(ONE_HOST);
      const cases: Array<[string[], string]> = [
        [['put', file, 'inbx'], 'No place named "inbx" in the net; did you mean "inbox"?'],
        [['put', file, 'nosuchplace'], 'No place named "nosuchplace" in the net (places: inbox, done, failed)'],
        [['ls', file, 'inbx'], 'No place named "inbx" in the net; did you mean "inbox"?'],
        [
          ['show', file, 'nosuchplace', '--key', 'k'],
          'No place named "nosuchplace" in the net (places: inbox, done, failed)',
        ],
        [['show', file, 'inbox', '--key', 'zz'], 'No token with key "zz" in place inbox'],
        [['show', file, 'inbox', '--seq', '99'], 'No token with number 99 in place inbox'],
        [['set-aside', file, 'inbx', '--key', 'k'], 'No place named "inbx" in the net; did you mean "inbox"?'],
        [['set-aside', file, 'inbox', '--key', 'zz'], 'No token with key "zz" in place inbox'],
        [['pause', file, 'wokr'], 'No transition named "wokr" in the net; did you mean "work"?'],
        [['resume', file, 'nosuch'], 'No transition named "nosuch" in the net (transitions: work)'],
        [['retry', file, 'faild', '--all'], 'No place named "faild" in the net; did you mean "failed"?'],
        [
          ['retry', file, '--all', '--to', 'nosuch'],
          'No place named "nosuch" in the net (places: inbox, done, failed)',
        ],
        [['retry', file, '--key', 'zz'], 'No error token with key "zz"'],
        [['retry', file, '--transition', 'zz'], 'No transition named "zz" in the net, and no error token names it'],
        [['retry', file, '--set-aside', '--key', 'zz'], 'No token set aside with key "zz"'],
        // A net that names no hosts: --host is a bad request, whatever the command.
        ...['check', 'init', 'status', 'run'].map((c): [string[], string] => [
          [c, file, '--host', 'h', ...(c === 'run' ? ['--drain'] : [])],
          '--host h: the net names no hosts',
        ]),
        [['ls', file, 'inbox', '--host', 'h'], '--host h: the net names no hosts'],
        [['pause', file, 'work', '--host', 'h'], '--host h: the net names no hosts'],
        [['serve', file, '--port', '0', '--net-host', 'h'], '--host h: the net names no hosts'],
      ];
      for (const [args, message] of cases) {
        const r = await runFspl(['net', ...args], { input: 'payload' });
        expect([r.status, r.stdout, r.stderr], args.join(' ')).toEqual([2, '', `Error: ${message}\n`]);
      }
      const simulate = await runFspl(['net', 'simulate', file, '-n', '1', '--service', 'wokr=1s']);
      expect([simulate.status, simulate.stderr]).toEqual([
        2,
        'error: --service names "wokr", which is not a transition of the net\n',
      ]);
      for (const p of ['inbox', 'done', 'failed'])
        expect(fs.readdirSync(path.join(dir, 'places', p, 'jobs')), p).toEqual([]);
      expect(fs.existsSync(path.join(dir, 'net.state', 'paused'))).toBe(false);
    },
  );

  it('a net across hosts: an unknown --host, or none where one is needed, exits 2', async () => {
    const dir = netDir();
    const file = path.join(dir, 'net.yaml');
    fs.writeFileSync(file, TWO_HOSTS);
    for (const c of ['check', 'init', 'status', 'run']) {
      const r = await runFspl(['net', c, file, '--host', 'alpah', ...(c === 'run' ? ['--drain'] : [])]);
      expect([r.status, r.stdout, r.stderr], c).toEqual([
        2,
        '',
        'Error: Unknown host "alpah": the net\'s hosts are alpha, beta; did you mean "alpha"?\n',
      ]);
    }
    const r = await runFspl(['net', 'run', file, '--drain']);
    expect([r.status, r.stderr]).toEqual([
      2,
      'Error: The net runs on several hosts (alpha, beta): say which one this is with --host NAME\n',
    ]);
  });

  it('a place not made yet (net init not run) is a bad request too, for put as for ls', async () => {
    const { dir, file } = makeNet(ONE_HOST);
    fs.rmSync(path.join(dir, 'places', 'inbox'), { recursive: true });
    for (const args of [
      ['put', file, 'inbox'],
      ['ls', file, 'inbox'],
    ]) {
      const r = await runFspl(['net', ...args], { input: 'x' });
      expect([r.status, r.stderr], args.join(' ')).toEqual([
        2,
        `Error: Place inbox has no queue at ${path.join(dir, 'places', 'inbox')}: run fspl net init first\n`,
      ]);
    }
  });
});

describe('fspl net put on a terminal', () => {
  it('says on stderr that it reads the payload from the terminal, and how to end it; in a pipe, nothing', async () => {
    const { file, net } = makeNet(NET);
    // script(1) gives it a pseudo-terminal for stdin, and types what it is given: a line, then Ctrl-D.
    const cmd = [process.execPath, FSPL_BIN, 'net', 'put', file, 'a'].map((a) => `'${a}'`).join(' ');
    const r = spawnSync('script', ['-qfec', cmd, '/dev/null'], { input: 'hello\n\x04', encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(
      "fspl net put: reading the token's payload from the terminal; " +
        'end it with Ctrl-D (or give -i FILE, or pipe it in)\r\n',
    );
    const piped = await runFspl(['net', 'put', file, 'a'], { input: 'x' });
    expect([piped.status, piped.stderr]).toEqual([0, '']);
    const seqs: bigint[] = [];
    for await (const t of net.tokens('a')) seqs.push(t.seq);
    const payloads = await Promise.all(
      seqs.map(async (n) => (await runFspl(['net', 'show', file, 'a', '--seq', String(n), '--payload'])).stdout),
    );
    expect(payloads).toEqual(['hello\n', 'x']);
  });
});
