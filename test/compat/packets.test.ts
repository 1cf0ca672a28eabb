/**
 * Packets written by `prepare*` are byte-identical to the reference's under a frozen clock, and
 * the sender's seqfile ends up the same.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import {
  both,
  describeCompat,
  expectBytes,
  expectSameOutput,
  fspl,
  type Impl,
  type RunOptions,
  readIf,
  T0,
  tmpDir,
} from './harness.js';

interface PacketCase {
  name: string;
  args: string[];
  /** Seqfile `sf` content before (absent: no seqfile). */
  seqfile?: string;
  opts?: RunOptions;
  /** Files to create in the working directory first. */
  files?: Record<string, Buffer | string>;
}

const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
const params200 = Array.from({ length: 200 }, (_, i) => String(i + 1));

const cases: PacketCase[] = [
  { name: 'prepare-nop, seqfile missing (created)', args: ['prepare-nop', '-s', 'sf'] },
  { name: 'prepare-nop -s -', args: ['prepare-nop', '-s', '-'] },
  { name: 'prepare-fail, seqfile at 41', args: ['prepare-fail', '-s', 'sf'], seqfile: '41\n' },
  { name: 'prepare without payload or params', args: ['prepare', '-s', 'sf'], seqfile: '7\n' },
  {
    name: 'prepare with params',
    args: ['prepare', '-s', 'sf', '--', 'one', 'two words', '', 'é€😀', 'new\nline', '-x', '--'],
    seqfile: '3\n',
  },
  { name: 'prepare, payload from stdin', args: ['prepare', '-s', '-', '-i', '-', '--', 'a'], opts: { stdin: binary } },
  {
    name: 'prepare, empty payload from stdin',
    args: ['prepare', '-s', '-', '-i', '-'],
    opts: { stdin: Buffer.alloc(0) },
  },
  {
    name: 'prepare, payload from a file',
    args: ['prepare', '-s', 'sf', '-i', 'payload.bin', '--', 'b'],
    files: { 'payload.bin': binary },
  },
  {
    name: 'prepare, 300 kB payload from a file',
    args: ['prepare', '-s', '-', '-i', 'big.bin'],
    files: { 'big.bin': Buffer.concat(Array.from({ length: 1200 }, () => binary)).subarray(0, 300_000) },
  },
  {
    name: 'prepare, one FSPL_SET_ variable',
    args: ['prepare', '-s', '-', '--', 'x'],
    opts: { env: { FSPL_SET_FOO: 'bar' } },
  },
  {
    name: 'prepare, several FSPL_SET_ variables in environment order (env -i)',
    args: ['prepare', '-s', '-'],
    opts: {
      env: {
        FSPL_SET_ZED: 'z',
        fspl_set_lower: 'ignored',
        FSPL_SET_A: '1=2',
        FSPL_SET_EMPTY: '',
        FSPL_SETX: 'ignored',
        FSPL_SET_MULTI: 'line1\nline2',
        FSPL_SET_UNI: 'é€😀',
        FSPL_SET_lower: 'kept',
        FSPL_SET_: 'empty name',
      },
    },
  },
  { name: 'prepare, 200 params (array16)', args: ['prepare', '-s', '-', '--', ...params200] },
  { name: 'prepare-nop, seqfile at 2^53+1', args: ['prepare-nop', '-s', 'sf'], seqfile: '9007199254740993\n' },
  { name: 'prepare, seqfile at 2^64-2', args: ['prepare', '-s', 'sf', '--', 'big'], seqfile: '18446744073709551614\n' },
  {
    name: 'prepare-nop, clock frozen in 2150',
    args: ['prepare-nop', '-s', '-'],
    opts: { frozen: '2150-01-01 00:00:00' },
  },
  {
    name: 'prepare, clock frozen in 2150, TZ=America/Chicago',
    args: ['prepare', '-s', '-', '--', 'p'],
    opts: { frozen: '2150-01-01 00:00:00', tz: 'America/Chicago' },
  },
  {
    name: 'prepare-nop, clock frozen at 2106-02-07 06:28:16 (2^32 s)',
    args: ['prepare-nop', '-s', '-'],
    opts: { frozen: '2106-02-07 06:28:16' },
  },
  {
    name: 'prepare-nop, clock frozen at 2038-01-19 03:14:08 (2^31 s)',
    args: ['prepare-nop', '-s', '-'],
    opts: { frozen: '2038-01-19 03:14:08' },
  },
  // The seqfile parser: first line, white space trimmed, leading + and zeros allowed.
  { name: 'seqfile " 5" (leading space)', args: ['prepare-nop', '-s', 'sf'], seqfile: ' 5\n' },
  { name: 'seqfile "5" without newline', args: ['prepare-nop', '-s', 'sf'], seqfile: '5' },
  { name: 'seqfile "+5"', args: ['prepare-nop', '-s', 'sf'], seqfile: '+5\n' },
  { name: 'seqfile "007"', args: ['prepare-nop', '-s', 'sf'], seqfile: '007\n' },
  { name: 'seqfile "5\\r\\n"', args: ['prepare-nop', '-s', 'sf'], seqfile: '5\r\n' },
  { name: 'seqfile "\\t5\\t" and a second line', args: ['prepare-nop', '-s', 'sf'], seqfile: '\t5\t\n6\n' },
  // Reading and setting the sender's next number.
  { name: 'prepare-get-next, seqfile missing', args: ['prepare-get-next', '-s', 'sf'] },
  {
    name: 'prepare-get-next, seqfile at 2^53+1',
    args: ['prepare-get-next', '-s', 'sf'],
    seqfile: '9007199254740993\n',
  },
  { name: 'prepare-get-next -s -', args: ['prepare-get-next', '-s', '-'] },
  { name: 'prepare-set-next, seqfile missing', args: ['prepare-set-next', '-s', 'sf', '18446744073709551615'] },
  { name: 'prepare-set-next over 12', args: ['prepare-set-next', '-s', 'sf', '+0042'], seqfile: '12\n' },
  { name: 'prepare-set-next -s -', args: ['prepare-set-next', '-s', '-', '5'] },
];

describeCompat('packets: prepare* output and seqfiles, byte for byte', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const root = tmpDir();
      const dirs = {} as Record<Impl, string>;
      for (const impl of ['ref', 'ours'] as const) {
        const d = path.join(root, impl);
        fs.mkdirSync(d);
        if (c.seqfile !== undefined) fs.writeFileSync(path.join(d, 'sf'), c.seqfile);
        for (const [name, data] of Object.entries(c.files ?? {})) fs.writeFileSync(path.join(d, name), data);
        dirs[impl] = d;
      }
      const r = await both(c.args, (impl) => ({ frozen: T0, ...c.opts, cwd: dirs[impl] }));
      expect(r.ref.code, `reference failed: ${r.ref.stderr}`).toBe(0);
      expectSameOutput(r, c.name);
      expect(readIf(path.join(dirs.ours, 'sf')), 'seqfile afterwards').toBe(readIf(path.join(dirs.ref, 'sf')));
      expect(fs.existsSync(path.join(dirs.ours, 'sf.lock')), 'sf.lock exists').toBe(
        fs.existsSync(path.join(dirs.ref, 'sf.lock')),
      );
      expect(fs.readdirSync(dirs.ours).sort(), 'files left in the directory').toEqual(fs.readdirSync(dirs.ref).sort());
    });
  }

  test('consecutive prepares advance the seqfile the same way', async () => {
    const root = tmpDir();
    for (const impl of ['ref', 'ours'] as const) fs.mkdirSync(path.join(root, impl));
    const out = { ref: [] as Buffer[], ours: [] as Buffer[] };
    for (const args of [
      ['prepare-nop', '-s', 'sf'],
      ['prepare', '-s', 'sf', '--', 'x'],
      ['prepare-fail', '-s', 'sf'],
    ]) {
      const r = await both(args, (impl) => ({ frozen: T0, cwd: path.join(root, impl) }));
      expectSameOutput(r, args.join(' '));
      out.ref.push(r.ref.stdout);
      out.ours.push(r.ours.stdout);
    }
    expectBytes(Buffer.concat(out.ours), Buffer.concat(out.ref), 'three packets');
    expect(readIf(path.join(root, 'ours', 'sf'))).toBe('4\n');
    expect(readIf(path.join(root, 'ref', 'sf'))).toBe('4\n');
  });

  test('prepare-set-next -s - then prepare-get-next -s -: the reference uses a file named "-" there', async () => {
    const root = tmpDir();
    for (const impl of ['ref', 'ours'] as const) fs.mkdirSync(path.join(root, impl));
    const set = await both(['prepare-set-next', '-s', '-', '5'], (impl) => ({ cwd: path.join(root, impl) }));
    expectSameOutput(set, 'prepare-set-next -s - 5');
    const get = await both(['prepare-get-next', '-s', '-'], (impl) => ({ cwd: path.join(root, impl) }));
    expect(get.ref.stdout.toString()).toBe('5\n');
    expectSameOutput(get, 'prepare-get-next -s -');
    // prepare itself never touches it: -s - means sequence 1.
    const nop = await both(['prepare-nop', '-s', '-'], (impl) => ({ cwd: path.join(root, impl), frozen: T0 }));
    expectSameOutput(nop, 'prepare-nop -s -');
    expect(readIf(path.join(root, 'ours', '-')), 'the file "-" afterwards').toBe(readIf(path.join(root, 'ref', '-')));
  });

  test(
    'a packet from our prepare equals the reference ' + 'golden packet (prepare -s - -i - -- one "two words")',
    async () => {
      const dir = tmpDir();
      const r = await fspl('ours', ['prepare', '-s', '-', '-i', '-', '--', 'one', 'two words'], {
        frozen: T0,
        cwd: dir,
        stdin: 'hello\n',
      });
      const ref = await fspl('ref', ['prepare', '-s', '-', '-i', '-', '--', 'one', 'two words'], {
        frozen: T0,
        cwd: dir,
        stdin: 'hello\n',
      });
      expectBytes(r.stdout, ref.stdout, 'packet');
    },
  );
});
