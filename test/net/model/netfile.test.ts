/**
 * Net files: every kind of error with file:line:column, all in one run, and the DOT drawing (warnings: check.test.ts).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { NetFileError, parseNetText } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { describeIfPresent } from '../../gate.js';
import { netDir, runFspl } from '../helpers.js';

function problems(text: string): string[] {
  try {
    parseNetText(text, 'net.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(NetFileError);
    return (err as NetFileError).message.split('\n');
  }
  throw new Error('expected an error');
}

const FIXTURES = path.resolve(__dirname, '../../fixtures/net');
/** The worked example of docs/nets.md. */
const VIDEO = path.resolve(__dirname, '../../../docs/nets/video/video.yaml');

describe('net check: errors with file:line:column', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['YAML syntax', 'places:\n  a: {\n', /^net\.yaml:3:1: /],
    ['duplicate key', 'places:\n  a: {}\n  a: {}\n', /^net\.yaml:3:3: .*[Mm]ap keys must be unique/],
    ['unknown top-level key', 'places: {}\nplaces2: {}\n', /^net\.yaml:2:1: unknown key "places2"/],
    ['unknown place key', 'places:\n  a: { dri: x }\n', /^net\.yaml:2:8: places\.a: unknown key "dri"/],
    ['bad order value', 'places:\n  a: { order: random }\n', /^net\.yaml:2:15: places\.a\.order: Invalid option/],
    ['bad capacity', 'places:\n  a: { capacity: 0 }\n', /^net\.yaml:2:18: places\.a\.capacity: /],
    [
      'missing in',
      'places: { a: {} }\ntransitions:\n  t: { out: a }\n',
      /^net\.yaml:3:3: transitions\.t\.in: missing \(required\)/,
    ],
    [
      'unknown input place',
      'places: { a: {} }\ntransitions:\n  t: { in: b, run: cat }\n',
      /^net\.yaml:3:12: Unknown place "b"/,
    ],
    [
      'unknown output place',
      'places: { a: {} }\ntransitions:\n  t:\n    in: a\n    out: [a, zz]\n',
      /^net\.yaml:5:14: Unknown place "zz"/,
    ],
    [
      'unknown error place',
      'places: { a: {} }\ntransitions:\n  t: { in: a, error: e }\n',
      /^net\.yaml:3:22: Unknown place "e"/,
    ],
    ['bad place name', 'places:\n  9a: {}\n', /^net\.yaml:2:3: Invalid place name "9a"/],
    [
      'bad transition name',
      'places: { a: {} }\ntransitions:\n  my-t: { in: a }\n',
      /^net\.yaml:3:3: Invalid transition name "my-t"/,
    ],
    [
      'one-of with one place',
      'places: { a: {}, b: {} }\ntransitions:\n  t: { in: a, run: x, out: { one-of: [b] } }\n',
      /^net\.yaml:3:38: transitions\.t\.out\.one-of: Too small/,
    ],
    [
      'batch in a merge',
      'places: { a: {}, b: {} }\ntransitions:\n  t: { in: [{ place: a, take: 2 }, b], run: x }\n',
      /^net\.yaml:3:12: An and-merge takes one token of each place/,
    ],
    [
      'negative retries',
      'places: { a: {} }\ntransitions:\n  t: { in: a, retries: -1 }\n',
      /^net\.yaml:3:24: transitions\.t\.retries: /,
    ],
    [
      'run of the wrong type',
      'places: { a: {} }\ntransitions:\n  t: { in: a, run: 3 }\n',
      /^net\.yaml:3:20: transitions\.t\.run: not a valid value/,
    ],
    [
      'same input twice',
      'places: { a: {} }\ntransitions:\n  t: { in: [a, a], run: x }\n',
      /^net\.yaml:3:16: Place "a" is an input twice/,
    ],
    [
      'name used twice',
      'places: { t: {} }\ntransitions:\n  t: { in: t, run: x }\n',
      /^net\.yaml:3:3: "t" names both a place and a transition/,
    ],
    [
      'xor without run',
      'places: { a: {}, b: {}, c: {} }\ntransitions:\n  t: { in: a, out: { one-of: [b, c] } }\n',
      /^net\.yaml:3:20: Without run/,
    ],
  ];
  for (const [what, text, expected] of cases) {
    test(what, () => {
      const lines = problems(text);
      expect(
        lines.some((l) => expected.test(l)),
        lines.join('\n'),
      ).toBe(true);
    });
  }

  test('the CLI prints every problem, one per line, and exits 2; a good file exits 0 with its warnings', async () => {
    const dir = netDir();
    const bad = path.join(dir, 'bad.yaml');
    fs.writeFileSync(bad, 'places:\n  a: { dri: x }\ntransitions:\n  t: { in: b }\n');
    const r = await runFspl(['net', 'check', bad]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      `${bad}:2:8: places.a: unknown key "dri"; did you mean "dir"?\n${bad}:4:12: Unknown place "b"\n`,
    );
    fs.writeFileSync(bad, 'places: { a: {} }\ntransitions:\n  t: { in: b }\n');
    const r2 = await runFspl(['net', 'check', bad]);
    expect(r2.status).toBe(2);
    expect(r2.stderr).toBe(`${bad}:3:12: Unknown place "b"\n`);
    const missing = await runFspl(['net', 'check', path.join(dir, 'nope.yaml')]);
    expect(missing.status).toBe(2);
    // The whole file: no line:column, and the system's words, not its code.
    expect(missing.stderr).toBe(
      `${path.join(dir, 'nope.yaml')}: cannot read the net file: No such file or directory\n`,
    );
    const good = await runFspl(['net', 'check', VIDEO]);
    expect(good.status).toBe(0);
    expect(good.stdout).toMatch(/ok: 9 places, 6 transitions/);
  });
});

describe('net check: every problem in one run', () => {
  const cases: Array<[string, string, string[]]> = [
    [
      'an unknown key and an unknown place: both, in the order the file reads',
      'places:\n  inbox: {}\n  done: {}\ntransitions:\n  work:\n' +
        '    in: inbx\n    out: done\n    retires: 2\n    run: cat\n',
      [
        'net.yaml:6:9: Unknown place "inbx"; did you mean "inbox"?',
        'net.yaml:8:5: transitions.work: unknown key "retires"; did you mean "retries"?',
      ],
    ],
    [
      "the schema's problems, the cross-checks' and duplicate keys, together",
      'places:\n  a: { capacty: 1 }\n  b: {}\n  b: {}\ntransitions:\n' +
        '  t: { in: a, out: bb, timeout: 0 }\n  u: { in: zz }\n',
      [
        'net.yaml:2:8: places.a: unknown key "capacty"; did you mean "capacity"?',
        'net.yaml:4:3: Map keys must be unique',
        'net.yaml:6:20: Unknown place "bb"; did you mean "b"?',
        'net.yaml:6:33: transitions.t.timeout: Too small: expected number to be >0',
        'net.yaml:7:12: Unknown place "zz"',
      ],
    ],
    [
      'a transition without in: said once, and the other transitions still checked',
      'places: { a: {} }\ntransitions:\n  t: { out: q }\n  u: { in: zz }\n',
      ['net.yaml:3:3: transitions.t.in: missing (required)', 'net.yaml:4:12: Unknown place "zz"'],
    ],
    [
      'a place whose settings are refused is still a place: arcs that name it are fine',
      'places:\n  a: 3\n  b: {}\ntransitions:\n  t: { in: a, out: b }\n  u: { in: b, out: q }\n',
      ['net.yaml:2:6: places.a: Invalid input: expected object, received number', 'net.yaml:6:20: Unknown place "q"'],
    ],
    [
      'a refused run: not also "needs a command" for the same transition',
      'places: { a: {}, b: {}, c: {} }\ntransitions:\n' +
        '  t: { in: a, run: 3, out: { one-of: [b, c] } }\n  u: { in: zz }\n',
      ['net.yaml:3:20: transitions.t.run: not a valid value here', 'net.yaml:4:12: Unknown place "zz"'],
    ],
    [
      'a refused host: not also "has no host"; the other hosts still checked',
      'hosts: { h1: {} }\nplaces:\n  a: { host: h1 }\ntransitions:\n' +
        '  t: { in: a, host: 3 }\n  u: { in: a, host: h2 }\n',
      [
        'net.yaml:5:21: transitions.t.host: Invalid input: expected string, received number',
        'net.yaml:6:12: Transition u (host h2) reads place a on ' +
          'host h1: a transition reads places of its own host only',
        'net.yaml:6:21: Unknown host "h2" (hosts: h1)',
      ],
    ],
    [
      'no places: that alone (every arc would be "unknown")',
      'transitions:\n  t: { in: a, colour: red }\n',
      ['net.yaml:1:1: places: missing (required)', 'net.yaml:2:15: transitions.t: unknown key "colour"'],
    ],
    [
      'a YAML syntax error alone: past it, the structure is a guess',
      'places:\n  a: {\ntransitions:\n  t: { in: zz }\n',
      ['net.yaml:3:1: Flow map in block collection must be sufficiently indented and end with a }'],
    ],
  ];
  for (const [what, text, expected] of cases) {
    test(what, () => {
      expect(problems(text)).toEqual(expected);
    });
  }

  test('every command that loads the net says them all, the same way, and exits 2', async () => {
    const dir = netDir();
    const bad = path.join(dir, 'bad.yaml');
    fs.writeFileSync(bad, 'places:\n  inbox: {}\ntransitions:\n  work: { in: inbx, run: cat, colour: red }\n');
    const said =
      `${bad}:4:15: Unknown place "inbx"; did you mean "inbox"?\n` +
      `${bad}:4:31: transitions.work: unknown key "colour"\n`;
    for (const args of [
      ['check', bad],
      ['status', bad],
      ['run', bad, '--drain'],
      ['put', bad, 'inbox'],
      ['ls', bad, 'inbox'],
      ['dot', bad],
    ]) {
      const r = await runFspl(['net', ...args], { input: '' });
      expect([r.status, r.stdout, r.stderr], args.join(' ')).toEqual([2, '', said]);
    }
  });
});

describe('net check: did you mean ...?', () => {
  const cases: Array<[string, string, string[]]> = [
    [
      'a misspelt transition key',
      'places: { a: {} }\ntransitions:\n  t: { in: a, retrys: 2 }\n',
      ['net.yaml:3:15: transitions.t: unknown key "retrys"; did you mean "retries"?'],
    ],
    [
      'a misspelt place key (two letters swapped)',
      'places:\n  a: { dri: x }\n',
      ['net.yaml:2:8: places.a: unknown key "dri"; did you mean "dir"?'],
    ],
    [
      'a misspelt top-level key',
      'stat: s\nplaces: { a: {} }\n',
      ['net.yaml:1:1: unknown key "stat"; did you mean "state"?'],
    ],
    [
      'a misspelt key of an input arc',
      'places: { a: {} }\ntransitions:\n  t: { in: { place: a, tkae: 2 } }\n',
      ['net.yaml:3:24: transitions.t.in: unknown key "tkae"; did you mean "take"?'],
    ],
    [
      'a misspelt key of a branch',
      'places: { a: {}, b: {}, c: {} }\ntransitions:\n  t: { in: a, run: x, out: { one-off: [b, c] } }\n',
      ['net.yaml:3:30: transitions.t.out: unknown key "one-off"; did you mean "one-of"?'],
    ],
    [
      'two unknown keys: one line each, at each key',
      'places: { a: {} }\ntransitions:\n  t: { in: a, tmeout: 3, colour: red }\n',
      [
        'net.yaml:3:15: transitions.t: unknown key "tmeout"; did you mean "timeout"?',
        'net.yaml:3:26: transitions.t: unknown key "colour"',
      ],
    ],
    [
      'a misspelt place in in, out and error',
      'places: { inbox: {}, done: {}, failed: {} }\ntransitions:\n' +
        '  t: { in: inbx, run: x, out: [doen], error: faild }\n',
      [
        'net.yaml:3:12: Unknown place "inbx"; did you mean "inbox"?',
        'net.yaml:3:32: Unknown place "doen"; did you mean "done"?',
        'net.yaml:3:46: Unknown place "faild"; did you mean "failed"?',
      ],
    ],
    [
      'a transition named where a place belongs',
      'places: { a: {}, b: {} }\ntransitions:\n  t: { in: a, run: x, out: b }\n  u: { in: t, run: x }\n',
      ['net.yaml:4:12: Unknown place "t" ("t" is a transition: arcs name places)'],
    ],
    [
      'nothing close: no guess',
      'places: { a: {}, b: {} }\ntransitions:\n  t: { in: c, run: x, colour: red }\n',
      ['net.yaml:3:12: Unknown place "c"', 'net.yaml:3:23: transitions.t: unknown key "colour"'],
    ],
  ];
  for (const [what, text, expected] of cases) {
    test(what, () => {
      expect(problems(text)).toEqual(expected);
    });
  }
});

describe('net dot', () => {
  test('the drawing of the video net is stable (golden file)', async () => {
    const r = await runFspl(['net', 'dot', VIDEO]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(fs.readFileSync(path.join(FIXTURES, 'video.dot'), 'utf8'));
  });

  const hasDot = spawnSync('dot', ['-V']).status === 0;
  describeIfPresent(
    'dot -Tsvg',
    hasDot ? [] : ['graphviz (dot)'],
    { what: 'graphviz check', note: 'apt-get install graphviz' },
    () => {
      test('Graphviz accepts the drawing', async () => {
        const r = await runFspl(['net', 'dot', VIDEO]);
        const svg = spawnSync('dot', ['-Tsvg'], { input: r.stdout });
        expect(svg.status, String(svg.stderr)).toBe(0);
        expect(String(svg.stdout)).toMatch(/<svg/);
        expect(String(svg.stdout)).toContain('stabilize');
      });
    },
  );
});
