/**
 * Usage errors (both exit 2; the wording differs on purpose) and accepted option forms (both
 * exit 0, same stdout).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  both,
  buildQueue,
  copyTree,
  describeCompat,
  expectUsageError,
  makePacket,
  type RunOptions,
  snapshot,
  tmpDir,
  tmpDirForSuite,
} from './harness.js';

/** Run fn over items, a few at a time. */
async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

describeCompat('usage errors and accepted option forms', () => {
  let root: string;
  let packet: Buffer;

  beforeAll(async () => {
    root = tmpDirForSuite();
    packet = await makePacket('ref', { seq: 1, params: ['p'], payload: 'payload' });
    await buildQueue('ref', path.join(root, 'q'), [{ seq: 1, payload: 'one' }]);
  });
  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  const opts = (extra: RunOptions = {}): RunOptions => ({ cwd: root, ...extra });

  // ----------------------------------------------------------------------------------------------
  // Usage errors: exit 2 in both.

  const USAGE_ERRORS: string[][] = [
    [],
    ['-l', 'debug'],
    ['nosuch'],
    ['queue-l'],
    ['--bogus'],
    ['queue-ls'],
    ['queue-ls', '-q'],
    ['queue-ls', '-q', 'q', 'extra'],
    ['queue-ls', '-q', 'q', '--bogus'],
    ['queue-ls', '-q', 'q', '-x'],
    ['queue-ls', '-q', 'q', '-q', 'q'],
    ['queue-ls', '--queue', 'q'],
    ['queue-ls', '-q', 'q', '-V'],
    ['queue-ls', '-q', 'q', '-l', 'debug'],
    ['queue-ls', '-q', 'q', '--', 'x'],
    ['queue-info', '-q', 'q'],
    ['queue-info', '-j', '1'],
    ['queue-info', '-q', 'q', '-j', 'abc'],
    ['queue-info', '-q', 'q', '-j', ''],
    ['queue-info', '-q', 'q', '-j', '18446744073709551616'],
    ['queue-info', '-q', 'q', '-j', '-1'],
    ['queue-info', '-q', 'q', '-j', ' 1'],
    ['queue-info', '-q', 'q', '-j', '0x1'],
    ['queue-info', '-q', 'q', '-j', '1.5'],
    ['queue-info', '-q', 'q', '-j', '1_000'],
    ['queue-info', '-q', 'q', '-j', '1', '-j', '1'],
    ['queue-payload', '-q', 'q'],
    ['queue-process', '-q', 'q'],
    ['queue-process', 'true'],
    ['queue-process', '-q', 'q', '--on-error', 'Foo', 'true'],
    ['queue-process', '-q', 'q', '--on-error=', 'true'],
    ['queue-process', '-q', 'q', '--on-error'],
    ['queue-process', '-q', 'q', '--order-by', 'seq', 'true'],
    ['queue-process', '-q', 'q', '--output-to', 'stdout', 'true'],
    ['queue-process', '-q', 'q', '-n', 'abc', 'true'],
    ['queue-process', '-q', 'q', '-n', '-1', 'true'],
    ['queue-process', '-q', 'q', '--timeout', '1.5s', 'true'],
    ['queue-process', '-q', 'q', '--timeout', 'abc', 'true'],
    ['queue-process', '-q', 'q', '--timeout', '-1', 'true'],
    ['queue-process', '-q', 'q', 'true', 'extra'],
    ['queue-process', '-q', 'q', 'true', 'a', '--', 'b'],
    ['queue-process', '-q', 'q', '--', 'true', 'a'],
    ['queue-process', '-q', 'q', '--never-delete', '--never-delete', 'true'],
    ['queue-process', '-q', 'q', '-n', '1', '-n', '2', 'true'],
    ['queue-set-next', '-q', 'q'],
    ['queue-set-next', '-q', 'q', 'abc'],
    ['queue-set-next', '-q', 'q', '-1'],
    ['queue-set-next', '-q', 'q', '18446744073709551616'],
    ['queue-set-next', '-q', 'q', '1', '2'],
    ['queue-get-next'],
    ['queue-get-next', '-q', 'q', '1'],
    ['queue-write'],
    ['queue-init'],
    ['queue-init', '-q', 'newq', '--append-only', '--append-only'],
    ['prepare'],
    ['prepare', '-i', '-', '--', 'a'],
    ['prepare', '-s'],
    ['prepare', '-s', 'sf', '-i'],
    ['prepare', '-s', 'sf', 'stray'],
    ['prepare', '-s', 'sf', '-s', 'sf'],
    ['prepare-nop'],
    ['prepare-nop', '-s'],
    ['prepare-nop', '-s', 'sf', '--', 'x'],
    ['prepare-fail', '-s', 'sf', 'x'],
    ['prepare-get-next'],
    ['prepare-set-next', '-s', 'sf'],
    ['prepare-set-next', '5'],
    ['prepare-set-next', '-s', 'sf', 'abc'],
    ['prepare-set-next', '-s', 'sf', '-1'],
    ['prepare-set-next', '-s', 'sf', '--', '-1'],
    ['prepare-set-next', '-s', 'sf', '1', '2'],
    ['stdin-process'],
    ['stdin-process', '--timeout', 'x', 'true'],
    ['stdin-info', 'extra'],
    ['stdin-payload', '--bogus'],
    ['gen-uuid', 'extra'],
    ['gen-filename', '-x'],
    ['show-license', 'x'],
    ['gen-uuid', '-l', 'debug'],
    ['-l', 'xyz', 'gen-uuid'],
    ['-l', 'warning', 'gen-uuid'],
    ['-l', '0', 'gen-uuid'],
    ['-l', '6', 'gen-uuid'],
    ['-l', '', 'gen-uuid'],
    ['-l', 'debug', '-l', 'info', 'gen-uuid'],
    ['help', 'nosuch'],
    ['help', '--help'],
    ['help', 'queue-ls', 'extra'],
  ];

  test('usage errors exit 2 in both', async () => {
    const failures: string[] = [];
    await inBatches(USAGE_ERRORS, 4, async (args) => {
      const r = await both(args, opts({ stdin: packet }));
      if (r.ref.code !== 2) failures.push(`test bug? the reference gave ${r.ref.code} for ${JSON.stringify(args)}`);
      else if (r.ours.code !== 2)
        failures.push(
          `fspl ${JSON.stringify(args)}: ours exited ${r.ours.code}, ` +
            `the reference 2; our stderr: ${r.ours.stderr.split('\n')[0]}`,
        );
    });
    expect(failures.sort()).toEqual([]);
    expect(fs.existsSync(path.join(root, 'newq')), 'queue-init with a usage error created nothing').toBe(false);
    expect(fs.existsSync(path.join(root, 'sf')), 'no seqfile was created by a usage error').toBe(false);
  });

  test('each usage error case also checked alone: exit 2 for a few representative ones', async () => {
    for (const args of [
      ['queue-ls'],
      ['queue-process', '-q', 'q', '--on-error', 'Foo', 'true'],
      ['prepare-set-next', '-s', 'sf', 'abc'],
    ]) {
      expectUsageError(await both(args, opts()), args.join(' '));
    }
  });

  test(
    '--timeout with a fraction of a second: the reference refuses ' +
      'it, ours takes it (an extension, docs/compatibility.md)',
    async () => {
      const dir = tmpDir();
      await buildQueue('ref', path.join(dir, 'built'), [{ seq: 1, payload: 'one' }]);
      for (const impl of ['ref', 'ours'] as const) await copyTree(path.join(dir, 'built'), path.join(dir, impl, 'q'));
      const r = await both(['queue-process', '-q', 'q', '--timeout', '0.5', 'true'], (impl) => ({
        cwd: path.join(dir, impl),
      }));
      expect([r.ref.code, r.ours.code]).toEqual([2, 0]);
      const s = await both(['stdin-process', '--timeout', '0.5', 'true'], opts({ stdin: packet }));
      expect([s.ref.code, s.ours.code]).toEqual([2, 0]);
    },
  );

  // Accepted forms (exit 0), compared on stdout where it is deterministic.
  const ACCEPTED: Array<[string[], boolean]> = [
    [['-l', 'DEBUG', 'queue-ls', '-q', 'q'], true],
    [['-l', 'dEbUg', 'queue-ls', '-q', 'q'], true],
    [['-ldebug', 'queue-ls', '-q', 'q'], true],
    [['--log-level=trace', 'queue-ls', '-q', 'q'], true],
    [['-l', '1', 'queue-ls', '-q', 'q'], true],
    [['-l', '5', 'queue-ls', '-q', 'q'], true],
    [['-l', 'error', 'queue-info', '-q', 'q', '-j', '1'], true],
    [['queue-ls', '-qq'], true],
    [['queue-ls', '--queuedir=q'], true],
    [['queue-info', '-q', 'q', '-j', '+1'], true],
    [['queue-info', '-q', 'q', '-j', '01'], true],
    [['queue-info', '-j', '1', '-q', 'q'], true],
    [['queue-payload', '--job=1', '--queuedir', 'q'], true],
    [['queue-process', '-q', 'q', '-n', '0', '--timeout', '0', 'true'], true],
    [
      [
        'queue-process',
        '-q',
        'q',
        '-n',
        '18446744073709551615',
        '--timeout',
        '18446744073709551615',
        '--never-delete',
        'true',
      ],
      true,
    ],
    [
      [
        'queue-process',
        '-q',
        'q',
        '-n',
        '4294967296',
        '--on-error',
        'rEtRy',
        '--order-by',
        'SEQUENCE',
        '--output-to',
        'PASSBOTH',
        '--never-delete',
        'true',
      ],
      true,
    ],
    [['queue-process', '--on-error=leave', '--never-delete', '-q', 'q', 'true', '--', '-x', '--y'], true],
    [['prepare-get-next', '-s', 'sf-accepted'], true],
    [['gen-uuid'], false],
    [['gen-filename'], false],
  ];

  test('accepted option forms exit 0 in both', async () => {
    const dir = tmpDir();
    await buildQueue('ref', path.join(dir, 'built'), [{ seq: 1, payload: 'one' }]);
    for (const impl of ['ref', 'ours'] as const) await copyTree(path.join(dir, 'built'), path.join(dir, impl, 'q'));
    const failures: string[] = [];
    for (const [args, compareStdout] of ACCEPTED) {
      const r = await both(args, (impl) => ({ cwd: path.join(dir, impl) }));
      expect(r.ref.code, `reference ${args.join(' ')}: ${r.ref.stderr}`).toBe(0);
      if (r.ours.code !== 0)
        failures.push(
          `fspl ${JSON.stringify(args)}: ours exited ${r.ours.code}, ` +
            `the reference 0; our stderr: ${r.ours.stderr.split('\n')[0]}`,
        );
      else if (compareStdout && !r.ours.stdout.equals(r.ref.stdout))
        failures.push(
          `fspl ${JSON.stringify(args)}: stdout differs:\n${r.ours.stdout}\nvs the reference's\n${r.ref.stdout}`,
        );
    }
    expect(failures).toEqual([]);
    expect(snapshot(path.join(dir, 'ours')), 'the queues afterwards').toEqual(snapshot(path.join(dir, 'ref')));
  });
});
