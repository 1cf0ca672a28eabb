/**
 * Small commands and edge cases: --version, gen-uuid, gen-filename, help exit statuses, big
 * --timeout values.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import {
  both,
  buildQueue,
  describeCompat,
  expectSameOutput,
  expectSameState,
  fspl,
  makePacket,
  runOnCopies,
  snapshot,
  tmpDir,
  writeExecutor,
} from './harness.js';

describeCompat('misc commands', () => {
  test('-V / --version print the version, whatever follows', async () => {
    for (const args of [
      ['-V'],
      ['--version'],
      ['-V', 'queue-ls'],
      ['-V', 'extra'],
      ['-V', '--bogus'],
      ['-l', 'debug', '-V'],
    ]) {
      const r = await both(args);
      expect(r.ref.stdout.toString()).toBe('filespooler 1.2.2\n');
      expectSameOutput(r, `fspl ${args.join(' ')}`);
    }
  });

  test('gen-uuid and gen-filename: lower-case UUID v4, exit 0, nothing on stderr', async () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const r = await both(['gen-uuid']);
    const f = await both(['gen-filename']);
    for (const impl of ['ref', 'ours'] as const) {
      for (const [x, y] of [
        [r[impl], (s: string) => s],
        [f[impl], (s: string) => s.replace(/^fspl-(.*)\.fspl$/, '$1')],
      ] as const) {
        expect(x.code).toBe(0);
        expect(x.stderr).toBe('');
        expect(x.stdout.toString().endsWith('\n')).toBe(true);
        expect(y(x.stdout.toString().slice(0, -1)), `${impl} output`).toMatch(uuid);
      }
    }
  });

  test(
    'help: -h, --help, help, SUB --help, help SUB exit 0 with ' +
      'text on stdout; no arguments exits 2 with nothing on stdout',
    async () => {
      for (const args of [
        ['-h'],
        ['--help'],
        ['help'],
        ['queue-ls', '--help'],
        ['queue-process', '-h'],
        ['help', 'queue-ls'],
        ['-h', 'queue-ls'],
        ['queue-ls', '-q', 'q', '--help'],
      ]) {
        const r = await both(args);
        expect(r.ref.code).toBe(0);
        expect(r.ours.code, `fspl ${args.join(' ')}: ${r.ours.stderr}`).toBe(0);
        expect(r.ours.stdout.length, `fspl ${args.join(' ')} prints help on stdout`).toBeGreaterThan(0);
      }
      const none = await both([]);
      expect(none.ref.code).toBe(2);
      expect(none.ours.code).toBe(2);
      expect(none.ours.stdout.length).toBe(0);
      expect(none.ours.stderr.length).toBeGreaterThan(0);
    },
  );

  test('show-license exits 0', async () => {
    const r = await both(['show-license']);
    expect(r.ref.code).toBe(0);
    expect(r.ours.code).toBe(0);
    expect(r.ours.stdout.length).toBeGreaterThan(0);
  });

  test('queue-write stores stdin verbatim (even junk) as jobs/fspl-UUID.fspl, mode and all', async () => {
    const root = tmpDir();
    const packet = await makePacket('ref', { seq: 3, payload: Buffer.alloc(200_000, 7) });
    for (const [i, stdin] of [packet, Buffer.from('not a packet')].entries()) {
      const shapes = {} as Record<'ref' | 'ours', string[]>;
      for (const impl of ['ref', 'ours'] as const) {
        const q = path.join(root, `${impl}${i}`);
        await buildQueue('ref', q, []);
        const r = await fspl(impl, ['queue-write', '-q', q], { stdin });
        expect(r.code, `${impl}: ${r.stderr}`).toBe(0);
        expect(r.stdout.length).toBe(0);
        const names = fs.readdirSync(path.join(q, 'jobs'));
        expect(names, `${impl}: one file named fspl-UUID.fspl`).toEqual([
          expect.stringMatching(/^fspl-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.fspl$/),
        ]);
        expect(fs.readFileSync(path.join(q, 'jobs', names[0]!)).equals(stdin), `${impl}: content`).toBe(true);
        shapes[impl] = Object.values(snapshot(q)).map((v) => v.replace(/^(file \d+ \d+).*/, '$1'));
      }
      expect(shapes.ours, 'modes and sizes').toEqual(shapes.ref);
    }
  });

  test(
    'queue-write of an empty stdin (a failed prepare upstream): ' +
      'the reference stores an empty job, ours refuses it (deliberate)',
    async () => {
      const root = tmpDir();
      for (const impl of ['ref', 'ours'] as const) {
        const q = path.join(root, impl);
        await buildQueue('ref', q, []);
        const r = await fspl(impl, ['queue-write', '-q', q], { stdin: Buffer.alloc(0) });
        const names = fs.readdirSync(path.join(q, 'jobs'));
        if (impl === 'ref') {
          expect(r.code).toBe(0);
          expect(names).toHaveLength(1);
        } else {
          expect(r.code).toBe(1);
          expect(r.stderr).toMatch(/^Error: Empty input: there is no packet to write[^\n]*\n$/);
          expect(names).toEqual([]);
        }
      }
    },
  );

  test('stdin-process --timeout beyond 2^31 ms (2147484 s, and u64 max) does not kill a quick command', async () => {
    const root = tmpDir();
    const exec = writeExecutor(root);
    const packet = await makePacket('ref', { seq: 1, payload: 'x' });
    for (const t of ['2147483', '2147484', '4294968', '18446744073709551615']) {
      const r = await both(['stdin-process', '--timeout', t, exec], { stdin: packet, cwd: root });
      expect(r.ref.code).toBe(0);
      expect(r.ours.code, `--timeout ${t}: ${r.ours.stderr}`).toBe(0);
    }
  });

  test('queue-process --timeout 2147484 does not kill a quick command', async () => {
    const root = tmpDir();
    await buildQueue('ref', path.join(root, 'built'), [
      { seq: 1, payload: 'a' },
      { seq: 2, payload: 'b' },
    ]);
    const s = await runOnCopies(path.join(root, 'built'), root, [
      'queue-process',
      '-q',
      'q',
      '--timeout',
      '2147484',
      'EXEC',
    ]);
    expect(s.ref.code).toBe(0);
    expectSameState(s, 'queue-process --timeout 2147484');
  });
});
