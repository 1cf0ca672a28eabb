/** net check's warnings: what is likely a mistake, never what is merely normal (sources, sinks). */
import fs from 'node:fs';
import path from 'node:path';
import { Net, parseNetText } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { runFspl } from '../helpers.js';

/** The worked example of docs/nets.md. */
const VIDEO = path.resolve(__dirname, '../../../docs/nets/video/video.yaml');
const DOCS = path.resolve(__dirname, '../../../docs');

function warnings(text: string): string[] {
  return new Net(parseNetText(text, '/tmp/net.yaml')).check().map((w) => `${w.kind} ${w.name}: ${w.message}`);
}

describe('net check: a valid net checks clean', () => {
  test('the shipped example: ok, and not a word on stderr', async () => {
    const r = await runFspl(['net', 'check', VIDEO]);
    expect([r.status, r.stderr, r.stdout]).toEqual([0, '', `${VIDEO}: ok: 9 places, 6 transitions, 0 warnings\n`]);
  });

  test("every net of the docs (README's, nets.md's, distributed.md's, nets-parallel.md's)", () => {
    const docs = ['../README.md', 'nets.md', 'distributed.md', 'nets-parallel.md'].map((f) => path.join(DOCS, f));
    const nets = docs.flatMap((f) =>
      [...fs.readFileSync(f, 'utf8').matchAll(/```ya?ml\n(.*?)```/gs)]
        .map((m) => m[1]!)
        .filter((y) => /^places:/m.test(y)),
    );
    expect(nets.length).toBeGreaterThanOrEqual(4);
    for (const text of nets) expect(warnings(text), text).toEqual([]);
  });

  test('sources and sinks are normal: a chain, an error place, an and-branch into two results', () => {
    expect(
      warnings(
        'places: { inbox: {}, done: {}, failed: {} }\ntransitions:\n' +
          '  work: { in: inbox, run: cat, out: done, error: failed }\n',
      ),
    ).toEqual([]);
    // stage1 and stage2 differ by a number only: two places, not a typo.
    expect(
      warnings(
        'places: { in: {}, out1: {}, out2: {} }\ntransitions:\n  split: { in: in, run: x, out: [out1, out2] }\n',
      ),
    ).toEqual([]);
    // A place that only inhibits a transition is used.
    expect(
      warnings(
        'places: { in: {}, out: {}, maintenance: {} }\ntransitions:\n' +
          '  t: { in: in, run: x, out: out, inhibit: [maintenance] }\n',
      ),
    ).toEqual([]);
  });
});

describe('net check: warnings where a mistake is likely', () => {
  test('a place nothing uses, with the place it probably copies', () => {
    expect(
      warnings(
        'places: { in: {}, results: {}, reslts: {}, spare: {} }\ntransitions:\n  t: { in: in, run: x, out: results }\n',
      ),
    ).toEqual([
      'unused reslts: place reslts is not used: no transition reads, ' +
        'writes or is inhibited by it (a misspelt copy of results?)',
      'unused spare: place spare is not used: no transition reads, writes or is inhibited by it',
    ]);
  });

  test(
    'a place written but read by nothing, next to a place read ' +
      'but written by nothing: one of them misspelt in an arc',
    () => {
      expect(
        warnings(
          'places: { in: {}, cleaned: {}, claened: {}, done: {} }\ntransitions:\n' +
            '  clean: { in: in, run: x, out: claened }\n  pack: { in: cleaned, run: x, out: done }\n',
        ),
      ).toEqual([
        'look-alike claened: place claened is written by clean but no transition ' +
          'reads it, and place cleaned is read by pack but none writes it: is one ' +
          'of them misspelt in an arc? (if it holds results, declare it sink: true)',
      ]);
    },
  );

  test('a place written but read by nothing whose name is close to a place read', () => {
    const text =
      'places: { a: {}, b: {}, results: {}, resuls: {}, done: {} }\ntransitions:\n' +
      '  t: { in: a, run: x, out: resuls }\n  u: { in: b, run: x, out: results }\n' +
      '  v: { in: results, run: x, out: done }\n';
    expect(warnings(text)).toEqual([
      'look-alike resuls: place resuls is written by t but no transition reads it: ' +
        'did t mean results, which is read? (if it holds results, declare it sink: true)',
    ]);
    // Declared a sink: meant, and said no more.
    expect(warnings(text.replace('resuls: {}', 'resuls: { sink: true }'))).toEqual([]);
  });

  test('two places written, read by nothing, with names one typo apart: one warning for the pair', () => {
    expect(
      warnings(
        'places: { a: {}, b: {}, done: {}, dnoe: {} }\ntransitions:\n' +
          '  t: { in: a, run: x, out: done }\n  u: { in: b, run: x, out: dnoe }\n',
      ),
    ).toEqual([
      'look-alike done: place done is written by t but no transition reads it, and its ' +
        "name is close to place dnoe's: a typo? (if it holds results, declare it sink: true)",
    ]);
  });

  test('a place declared sink: true that a transition reads', () => {
    expect(
      warnings('places: { in: { sink: true }, out: {} }\ntransitions:\n  t: { in: in, run: x, out: out }\n'),
    ).toEqual(['sink-read in: place in is declared sink: true, but t reads it']);
  });

  test('a place read by two transitions, and parts no token can reach', () => {
    const w = warnings(`
places: { in: {}, shared: {}, x: {}, y: {}, island: {}, island2: {}, out: {} }
transitions:
  first: { in: in, run: cat, out: shared }
  r1: { in: shared, run: cat, out: x }
  r2: { in: shared, run: cat, out: y }
  loop: { in: [island, island2], run: cat, out: island2 }
  sinkit: { in: x, run: cat, out: out }
`).map((x) => x.split(':')[0]);
    expect(w).toEqual(['shared-input shared', 'unreachable island2', 'unreachable loop']);
  });

  test('the CLI: each warning on stderr, exit 0', async () => {
    const dir = fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), 'fspl-check-'));
    const file = path.join(dir, 'net.yaml');
    fs.writeFileSync(file, 'places: { in: {}, out: {}, spare: {} }\ntransitions:\n  t: { in: in, run: x, out: out }\n');
    const r = await runFspl(['net', 'check', file]);
    expect([r.status, r.stderr, r.stdout]).toEqual([
      0,
      `${file}: warning: place spare is not used: no transition reads, writes or is inhibited by it\n`,
      `${file}: ok: 3 places, 1 transitions, 1 warning\n`,
    ]);
    fs.rmSync(dir, { recursive: true });
  });
});
