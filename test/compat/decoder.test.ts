/**
 * Decoder queues: jobs stored gzip-compressed (`fspl prepare ... | gzip | fspl queue-write`) and
 * read back with `-d zcat` by queue-ls, queue-info, queue-payload and queue-process.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  both,
  buildQueue,
  describeCompat,
  expectBytes,
  expectSameOutput,
  expectSameState,
  type Impl,
  type JobSpec,
  runOnCopies,
  sha256,
  tmpDir,
  tmpDirForSuite,
} from './harness.js';

const big = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251));

// Distinct ctimes, so that timestamp order has no ties (ties are covered in the process scenarios).
const GZ_JOBS: JobSpec[] = [
  { seq: 1, params: ['a', 'b c'], env: { FOO: 'bar' }, payload: 'first payload\n', gzip: true },
  { seq: 2, payload: big, gzip: true, time: '2030-07-02 03:04:05' },
  { seq: 3, kind: 'nop', gzip: true, time: '2030-01-01 00:00:00' },
  { seq: 4, env: { EXIT: '3' }, payload: 'failing', gzip: true, time: '2030-01-03 00:00:00' },
  { seq: 5, payload: 'last', gzip: true, time: '2029-12-31 00:00:00' },
];

/** One plain job among gzipped ones: each view sees only its kind. */
const MIXED_JOBS: JobSpec[] = [
  { seq: 1, payload: 'gz one', gzip: true },
  { seq: 2, payload: 'plain two' },
  { seq: 3, payload: 'gz three', gzip: true },
];

describeCompat('decoders (-d zcat)', () => {
  let root: string;
  const gz = {} as Record<Impl, string>;
  let mixed: string;

  beforeAll(async () => {
    root = tmpDirForSuite();
    await Promise.all([
      ...(['ref', 'ours'] as const).map(async (impl) => {
        gz[impl] = path.join(root, `gz-${impl}`);
        await buildQueue(impl, gz[impl], GZ_JOBS);
      }),
      (async () => {
        mixed = path.join(root, 'mixed');
        await buildQueue('ref', mixed, MIXED_JOBS);
      })(),
    ]);
  });
  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  test('queue-ls -d zcat lists the gzipped jobs (UTC and America/Chicago)', async () => {
    for (const tz of ['UTC', 'America/Chicago']) {
      const r = await both(['queue-ls', '-q', gz.ref, '-d', 'zcat'], { tz });
      expect(r.ref.stdout.toString().split('\n')).toHaveLength(7);
      expectSameOutput(r, `queue-ls -d zcat TZ=${tz}`);
    }
  });

  test('without -d the gzipped jobs are invisible to queue-ls', async () => {
    const r = await both(['queue-ls', '-q', gz.ours]);
    expect(r.ref.stdout.toString().split('\n')).toHaveLength(2);
    expectSameOutput(r, 'queue-ls without -d');
  });

  test('mixed queue: -d zcat sees the gzipped jobs, no decoder sees the plain one', async () => {
    for (const args of [
      ['queue-ls', '-q', mixed, '-d', 'zcat'],
      ['queue-ls', '-q', mixed],
      ['queue-info', '-q', mixed, '-j', '2'],
      ['queue-info', '-q', mixed, '-j', '3', '-d', 'zcat'],
    ]) {
      const r = await both(args);
      expect(r.ref.code).toBe(0);
      expectSameOutput(r, args.join(' '));
    }
    for (const args of [
      ['queue-info', '-q', mixed, '-j', '2', '-d', 'zcat'],
      ['queue-payload', '-q', mixed, '-j', '1'],
    ]) {
      const r = await both(args);
      expect(r.ref.code, `${args.join(' ')}: the job is invisible, so not found`).toBe(1);
      expect(r.ours.code, `${args.join(' ')}: ${r.ours.stderr}`).toBe(1);
    }
  });

  test('queue-info -d zcat for every job (queues built by each implementation)', async () => {
    for (const impl of ['ref', 'ours'] as const) {
      for (const seq of ['1', '2', '3', '4', '5']) {
        const r = await both(['queue-info', '-q', gz[impl], '-d', 'zcat', '-j', seq], { tz: 'America/Chicago' });
        expect(r.ref.code, r.ref.stderr).toBe(0);
        expectSameOutput(r, `queue-info -d zcat -j ${seq} (built by ${impl})`);
      }
    }
  });

  test('queue-payload -d zcat', async () => {
    for (const seq of ['1', '2', '3']) {
      const r = await both(['queue-payload', '-q', gz.ref, '-d', 'zcat', '-j', seq]);
      expect(r.ref.code, r.ref.stderr).toBe(0);
      expect(r.ours.code, r.ours.stderr).toBe(0);
      expectBytes(r.ours.stdout, r.ref.stdout, `queue-payload -d zcat -j ${seq}`);
    }
    const r2 = await both(['queue-payload', '-q', gz.ours, '-d', 'gzip -dc', '-j', '2']);
    expect(sha256(r2.ref.stdout)).toBe(sha256(big));
    expect(sha256(r2.ours.stdout)).toBe(sha256(big));
  });

  test('a decoder that fails or truncates the header: the job is not found', async () => {
    for (const decoder of ['false', 'exit 3', 'zcat | head -c 40']) {
      const r = await both(['queue-info', '-q', gz.ref, '-d', decoder, '-j', '1']);
      expect(r.ref.code).toBe(1);
      expect(r.ours.code, `-d ${decoder}: ${r.ours.stderr}`).toBe(1);
      const ls = await both(['queue-ls', '-q', gz.ref, '-d', decoder]);
      expectSameOutput(ls, `queue-ls -d ${JSON.stringify(decoder)}`);
    }
  });

  for (const builder of ['ref', 'ours'] as const) {
    test(`queue-process -d zcat --on-error leave (built by ${builder}): same log and payload digests`, async () => {
      const s = await runOnCopies(gz[builder], tmpDir(), [
        'queue-process',
        '-q',
        'q',
        '-d',
        'zcat',
        '--on-error',
        'leave',
        'EXEC',
      ]);
      expect(s.ref.code).toBe(0);
      expect(s.ref.log).toContain(`stdin-sha256=${sha256(big)}`);
      expectSameState(s, `queue-process -d zcat (built by ${builder})`);
    });
  }

  test('queue-process -d zcat, Retry stops at the failing job; SaveBoth', async () => {
    const s = await runOnCopies(gz.ref, tmpDir(), [
      'queue-process',
      '-q',
      'q',
      '-d',
      'zcat',
      '--output-to',
      'saveboth',
      'EXEC',
      '--',
      'x',
    ]);
    expect(s.ref.code).toBe(1);
    expectSameState(s, 'queue-process -d zcat --output-to saveboth');
  });

  test('queue-process -d zcat --ignore-payload --allow-job-params -n 2', async () => {
    const s = await runOnCopies(
      gz.ref,
      tmpDir(),
      ['queue-process', '-q', 'q', '-d', 'zcat', '--ignore-payload', '--allow-job-params', '-n', '2', 'EXEC'],
      {
        stdin: Buffer.from('fspl stdin\n'),
      },
    );
    expect(s.ref.code).toBe(0);
    expectSameState(s, 'queue-process -d zcat --ignore-payload');
  });

  test('queue-process -d zcat --order-by timestamp --on-error delete', async () => {
    const s = await runOnCopies(gz.ours, tmpDir(), [
      'queue-process',
      '-q',
      'q',
      '-d',
      'zcat',
      '--order-by',
      'timestamp',
      '--on-error',
      'delete',
      'EXEC',
    ]);
    expect(s.ref.code).toBe(0);
    expectSameState(s, 'queue-process -d zcat --order-by timestamp');
  });

  test(
    'a command that does not read its (decoded) payload ' +
      'succeeds; nothing else changes (repeated: timing-sensitive)',
    async () => {
      const dir = tmpDir();
      const built = path.join(dir, 'built');
      // 4 MB that gzip cannot shrink: zcat is still writing when the command exits
      const noise = Buffer.alloc(4_000_000);
      for (let i = 0, x = 12345; i < noise.length; i++) {
        x = (x * 1103515245 + 12345) >>> 0;
        noise[i] = x >>> 24;
      }
      await buildQueue('ref', built, [
        { seq: 1, payload: noise, gzip: true },
        { seq: 2, kind: 'nop', gzip: true },
      ]);
      for (let round = 0; round < 6; round++) {
        for (const extra of [[], ['--ignore-payload']]) {
          const args = ['queue-process', '-q', 'q', '-d', 'zcat', ...extra, 'true'];
          const s = await runOnCopies(built, path.join(dir, `r${round}-${extra.length}`), args, {
            stdin: Buffer.from('x'),
          });
          expect(s.ref.code).toBe(0);
          expectSameState(s, `round ${round}: ${args.join(' ')}`);
        }
      }
    },
  );

  test('queue-process without -d on a gzipped queue: nothing to run', async () => {
    const s = await runOnCopies(gz.ref, tmpDir(), ['queue-process', '-q', 'q', 'EXEC']);
    expect(s.ref.code).toBe(0);
    expect(s.ref.log).toBe('');
    expectSameState(s, 'queue-process without -d');
  });

  test('queue-process -d zcat on the mixed queue: the plain job is a gap', async () => {
    const s = await runOnCopies(mixed, tmpDir(), ['queue-process', '-q', 'q', '-d', 'zcat', 'EXEC']);
    expect(s.ref.code).toBe(0);
    expectSameState(s, 'queue-process -d zcat on a mixed queue');
  });
});
