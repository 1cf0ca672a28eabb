/**
 * Lock exclusion between the implementations: while one holds `nextseq.lock` (a queue-process
 * run whose job waits), the other's lock-taking commands fail at once with exit 1; the same
 * against `flock(1)` holders, and on the sender side with a locked seqfile.
 */

import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { expect, test } from 'vitest';
import {
  buildQueue,
  describeCompat,
  expectRuntimeError,
  fspl,
  type Impl,
  makePacket,
  type RunResult,
  readIf,
  spawnFspl,
  tmpDir,
  toResult,
  waitFor,
  writeExecutor,
} from './harness.js';

/** Hold `file` with flock(1) (exclusive or shared) until release() is called. */
async function holdWithFlock(file: string, mode: '-x' | '-s'): Promise<{ release: () => Promise<void> }> {
  // -o: the lock is not passed on to `sleep`, so killing flock's process group releases it.
  const child = execa('flock', [mode, '-o', file, 'sleep', '60'], { detached: true, stdio: 'ignore', reject: false });
  await waitFor(
    async () =>
      (await execa('flock', ['-n', mode === '-x' ? '-s' : '-x', file, 'true'], { reject: false })).exitCode === 1,
    `flock ${mode} on ${file}`,
  );
  return {
    release: async () => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL'); // the group we started: flock and its sleep
        } catch {
          /* already gone */
        }
      }
      await child;
    },
  };
}

/** Commands that must fail at once while the queue lock is held. */
const QUEUE_LOCKERS: string[][] = [
  ['queue-process', '-q', 'q', 'EXEC'],
  ['queue-process', '-q', 'q', '--order-by', 'timestamp', 'EXEC'],
  ['queue-process', '-q', 'q', '-n', '0', 'EXEC'],
  ['queue-set-next', '-q', 'q', '5'],
  ['queue-get-next', '-q', 'q'],
];

/** Commands that take no lock and must keep working. */
const QUEUE_READERS: string[][] = [
  ['queue-ls', '-q', 'q'],
  ['queue-info', '-q', 'q', '-j', '1'],
  ['queue-payload', '-q', 'q', '-j', '1'],
];

async function expectLockedOut(impl: Impl, cwd: string, exec: string): Promise<void> {
  for (const args of QUEUE_LOCKERS) {
    const argv = args.map((a) => (a === 'EXEC' ? exec : a));
    const r = await fspl(impl, argv, { cwd, timeoutMs: 15_000 });
    expect(r.code, `${impl} ${args.join(' ')} while the lock is held; stderr: ${r.stderr}`).toBe(1);
    expect(r.stdout.length, `${impl} ${args.join(' ')}: stdout`).toBe(0);
    expect(r.stderr.split('\n').filter(Boolean).at(-1), `${impl} ${args.join(' ')}: stderr`).toMatch(/^Error: /);
    if (impl === 'ours') expect(r.stderr.split('\n').filter(Boolean), 'our stderr: one line').toHaveLength(1);
  }
  for (const args of QUEUE_READERS) {
    const r = await fspl(impl, args, { cwd });
    expect(r.code, `${impl} ${args.join(' ')} takes no lock; stderr: ${r.stderr}`).toBe(0);
  }
  const w = await fspl(impl, ['queue-write', '-q', 'q'], { cwd, stdin: fs.readFileSync(path.join(cwd, 'extra.fspl')) });
  expect(w.code, `${impl} queue-write takes no lock; stderr: ${w.stderr}`).toBe(0);
}

describeCompat('lock exclusion', () => {
  for (const holder of ['ref', 'ours'] as const) {
    const contender = holder === 'ref' ? 'ours' : 'ref';
    test(
      `while ${holder === 'ref' ? 'the reference' : 'our'} queue-process runs ` +
        `a job, ${contender === 'ref' ? 'the reference' : 'ours'} is locked out`,
      async () => {
        const root = tmpDir();
        const exec = writeExecutor(root);
        const q = path.join(root, 'q');
        // job 1 holds until ./release exists; job 2 is ordinary
        await buildQueue('ref', q, [
          { seq: 1, env: { HOLD: '1' }, payload: 'held' },
          { seq: 2, payload: 'second' },
        ]);
        fs.writeFileSync(path.join(root, 'extra.fspl'), await makePacket('ref', { seq: 3, kind: 'nop' }));

        const bg = spawnFspl(holder, ['queue-process', '-q', 'q', exec], { cwd: root, timeoutMs: 40_000 });
        let result: RunResult | undefined;
        try {
          await waitFor(() => fs.existsSync(path.join(root, 'started')), 'the held job to start');
          await expectLockedOut(contender, root, exec);
          // nextseq untouched by the contender while held
          expect(readIf(path.join(q, 'nextseq'))).toBe('1\n');
        } finally {
          fs.writeFileSync(path.join(root, 'release'), '');
          result = toResult(await bg, `${holder} queue-process`);
        }
        expect(result.code, `the holder's run; stderr: ${result.stderr}`).toBe(0);
        expect(readIf(path.join(q, 'nextseq')), 'nextseq after the holder finished').toBe('3\n');
        // the holder ran jobs 1 and 2, nobody else ran anything
        expect((readIf(path.join(root, 'log')) ?? '').split('\n').filter((l) => l === '=== job')).toHaveLength(2);
        // and the lock is free again for the contender
        const after = await fspl(contender, ['queue-get-next', '-q', 'q'], { cwd: root });
        expect(after.code, after.stderr).toBe(0);
        expect(after.stdout.toString()).toBe('3\n');
      },
    );
  }

  test(
    'flock -x on nextseq.lock: queue-process, queue-set-next ' + 'and queue-get-next fail in both, readers work',
    async () => {
      const root = tmpDir();
      const exec = writeExecutor(root);
      await buildQueue('ref', path.join(root, 'q'), [{ seq: 1, payload: 'x' }]);
      fs.writeFileSync(path.join(root, 'extra.fspl'), await makePacket('ref', { seq: 5, kind: 'nop' }));
      const hold = await holdWithFlock(path.join(root, 'q', 'nextseq.lock'), '-x');
      try {
        for (const impl of ['ref', 'ours'] as const) await expectLockedOut(impl, root, exec);
      } finally {
        await hold.release();
      }
      expect(readIf(path.join(root, 'q', 'nextseq'))).toBe('1\n');
      expect(fs.existsSync(path.join(root, 'log')), 'no job ran').toBe(false);
      // released: the lock can be taken again
      for (const impl of ['ref', 'ours'] as const) {
        const r = await fspl(impl, ['queue-set-next', '-q', 'q', '7'], { cwd: root });
        expect(r.code, r.stderr).toBe(0);
      }
      expect(readIf(path.join(root, 'q', 'nextseq'))).toBe('7\n');
    },
  );

  test('flock -s (shared) on nextseq.lock also blocks queue-get-next and queue-set-next', async () => {
    const root = tmpDir();
    await fspl('ref', ['queue-init', '-q', path.join(root, 'q')]);
    const hold = await holdWithFlock(path.join(root, 'q', 'nextseq.lock'), '-s');
    try {
      for (const args of [
        ['queue-get-next', '-q', 'q'],
        ['queue-set-next', '-q', 'q', '9'],
      ]) {
        const r = {
          ref: await fspl('ref', args, { cwd: root }),
          ours: await fspl('ours', args, { cwd: root }),
        };
        expectRuntimeError(r, `${args.join(' ')} under a shared flock`);
      }
    } finally {
      await hold.release();
    }
    expect(readIf(path.join(root, 'q', 'nextseq'))).toBe('1\n');
  });

  test('sender side: prepare* with a locked seqfile fail with exit 1 and print nothing', async () => {
    const root = tmpDir();
    fs.writeFileSync(path.join(root, 'sf'), '12\n');
    fs.writeFileSync(path.join(root, 'sf.lock'), '');
    const hold = await holdWithFlock(path.join(root, 'sf.lock'), '-x');
    try {
      for (const args of [
        ['prepare', '-s', 'sf', '--', 'a'],
        ['prepare', '-s', 'sf', '-i', '-'],
        ['prepare-nop', '-s', 'sf'],
        ['prepare-fail', '-s', 'sf'],
        ['prepare-get-next', '-s', 'sf'],
        ['prepare-set-next', '-s', 'sf', '99'],
      ]) {
        const r = {
          ref: await fspl('ref', args, { cwd: root, stdin: 'payload' }),
          ours: await fspl('ours', args, { cwd: root, stdin: 'payload' }),
        };
        expectRuntimeError(r, `${args.join(' ')} with sf.lock held`);
      }
    } finally {
      await hold.release();
    }
    expect(readIf(path.join(root, 'sf')), 'the seqfile is unchanged').toBe('12\n');
    const r = await fspl('ours', ['prepare-get-next', '-s', 'sf'], { cwd: root });
    expect(r.stdout.toString()).toBe('12\n');
  });
});
