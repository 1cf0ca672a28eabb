/**
 * File operations in batches (src/sys/fs-batch.ts): the native addon's one-hand-off path
 * (native/fs_batch.c) and the pure-Node fallback (FSPL_NO_NATIVE=1) give the same results, on a
 * pool thread (runBatch) and on the calling thread (runBatchSync).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type BatchOp,
  firstFailedStep,
  firstFailure,
  runBatch as runBatchAsync,
  runBatchesAtOnce,
  runBatchSync,
} from '../../src/sys/fs-batch.js';
import { loadNative } from '../../src/sys/native.js';
import { tempDir } from '../helpers.js';

const ENOENT = -os.constants.errno.ENOENT;
const EEXIST = -os.constants.errno.EEXIST;
const ECANCELED = -os.constants.errno.ECANCELED;
const CREATE = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL;

const saved = process.env.FSPL_NO_NATIVE;
const haveNative = (() => {
  delete process.env.FSPL_NO_NATIVE;
  const b = loadNative();
  if (saved !== undefined) process.env.FSPL_NO_NATIVE = saved;
  return typeof b?.fsBatch === 'function';
})();

for (const [mode, thread] of [
  ['native', 'pool'],
  ['fallback', 'pool'],
  ['native', 'caller'],
  ['fallback', 'caller'],
] as const) {
  const runBatch = thread === 'pool' ? runBatchAsync : async (ops: readonly BatchOp[]) => runBatchSync(ops);
  describe.skipIf(mode === 'native' && !haveNative)(
    `${thread === 'pool' ? 'runBatch' : 'runBatchSync'} (${mode})`,
    () => {
      let dir: string;
      beforeEach(() => {
        if (mode === 'native') delete process.env.FSPL_NO_NATIVE;
        else process.env.FSPL_NO_NATIVE = '1';
        dir = tempDir();
      });
      afterEach(() => {
        if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
        else process.env.FSPL_NO_NATIVE = saved;
        fs.rmSync(dir, { recursive: true, force: true });
      });

      it('runs the operations in order and reports each one', async () => {
        const a = path.join(dir, 'a');
        const b = path.join(dir, 'b');
        const [fd] = await runBatch([{ op: 'open', path: a, flags: CREATE, mode: 0o600 }]);
        expect(fd).toBeGreaterThanOrEqual(0);
        fs.writeSync(fd!, 'part');
        const ops: BatchOp[] = [
          { op: 'fsync', fd: fd! },
          { op: 'close', fd: fd! },
          { op: 'rename', from: a, to: b },
          { op: 'fsyncDir', path: dir },
          {
            op: 'writeFile',
            path: path.join(dir, 'seq.temp'),
            flags: fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC,
            mode: 0o644,
            data: Buffer.from('7\n'),
          },
          { op: 'unlink', path: path.join(dir, 'missing'), missingOk: true },
          { op: 'open', path: b, flags: CREATE, mode: 0o600 },
        ];
        const r = await runBatch(ops);
        expect([...r]).toEqual([0, 0, 0, 0, 0, ENOENT, EEXIST]);
        expect(fs.readFileSync(b, 'utf8')).toBe('part');
        expect(fs.readFileSync(path.join(dir, 'seq.temp'), 'utf8')).toBe('7\n');
        // The missing unlink is allowed; the open over an existing file is the first failure.
        const err = firstFailure(ops, r);
        expect(err?.code).toBe('EEXIST');
        expect(err?.path).toBe(b);
      });

      it('runs nothing after a failed `must` operation', async () => {
        const kept = path.join(dir, 'kept');
        fs.writeFileSync(kept, 'x');
        const ops: BatchOp[] = [
          { op: 'rename', from: path.join(dir, 'nothing'), to: path.join(dir, 'x'), must: true },
          { op: 'unlink', path: kept },
        ];
        const r = await runBatch(ops);
        expect([...r]).toEqual([ENOENT, ECANCELED]);
        expect(fs.existsSync(kept)).toBe(true);
        expect(firstFailure(ops, r)?.code).toBe('ENOENT');
      });

      it('a missing file is no failure for `must` with missingOk: what follows runs', async () => {
        const kept = path.join(dir, 'kept');
        fs.writeFileSync(kept, 'x');
        const ops: BatchOp[] = [
          { op: 'rename', from: path.join(dir, 'nothing'), to: path.join(dir, 'x'), must: true, missingOk: true },
          { op: 'unlink', path: path.join(dir, 'nothing'), must: true, missingOk: true },
          { op: 'unlink', path: kept },
        ];
        const r = await runBatch(ops);
        expect([...r]).toEqual([ENOENT, ENOENT, 0]);
        expect(fs.existsSync(kept)).toBe(false);
        expect(firstFailure(ops, r)).toBeUndefined();
        // Any other failure still stops the batch.
        fs.mkdirSync(path.join(dir, 'sub'));
        fs.writeFileSync(path.join(dir, 'sub', 'f'), '');
        fs.writeFileSync(kept, 'x');
        const r2 = await runBatch([
          { op: 'rename', from: kept, to: path.join(dir, 'sub'), must: true, missingOk: true },
          { op: 'unlink', path: kept },
        ]);
        expect(r2[0]).toBeLessThan(0);
        expect(r2[0]).not.toBe(ENOENT);
        expect(r2[1]).toBe(ECANCELED);
        expect(fs.existsSync(kept)).toBe(true);
      });

      it('appends to a descriptor and fsyncs it, in its turn', async () => {
        const file = path.join(dir, 'journal');
        fs.writeFileSync(file, 'first\n');
        const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_APPEND);
        try {
          const ops: BatchOp[] = [
            { op: 'append', fd, data: Buffer.from('second\n'), must: true },
            { op: 'append', fd, data: Buffer.alloc(0) },
            { op: 'append', fd, data: Buffer.from('third\n') },
          ];
          expect([...(await runBatch(ops))]).toEqual([0, 0, 0]);
          expect(fs.readFileSync(file, 'utf8')).toBe('first\nsecond\nthird\n');
          // A closed descriptor: EBADF, and nothing after a `must` one.
          const bad: BatchOp[] = [
            { op: 'append', fd: 1_000_000, data: Buffer.from('x'), must: true },
            { op: 'append', fd, data: Buffer.from('never\n') },
          ];
          const r = await runBatch(bad);
          expect(r[0]).toBe(-os.constants.errno.EBADF);
          expect(r[1]).toBe(ECANCELED);
          expect(firstFailure(bad, r)?.syscall).toBe('write');
          expect(fs.readFileSync(file, 'utf8')).toBe('first\nsecond\nthird\n');
        } finally {
          fs.closeSync(fd);
        }
      });

      it('writes a file from bytes and another file, durably, and reports a missing source', async () => {
        const src = path.join(dir, 'src');
        const big = Buffer.alloc(200_000, 'p'); // more than one copy or read
        fs.writeFileSync(src, big);
        const dest = path.join(dir, 'dest');
        const ops: BatchOp[] = [
          {
            op: 'writeFileFrom',
            path: dest,
            flags: CREATE,
            mode: 0o644,
            data: Buffer.from('head:'),
            from: src,
            must: true,
          },
          {
            op: 'writeFileFrom',
            path: path.join(dir, 'empty'),
            flags: CREATE,
            mode: 0o644,
            data: Buffer.alloc(0),
            from: path.join(dir, 'dest'),
            must: true,
          },
          {
            op: 'writeFileFrom',
            path: path.join(dir, 'never'),
            flags: CREATE,
            mode: 0o644,
            data: Buffer.from('x'),
            from: path.join(dir, 'missing'),
            must: true,
          },
          { op: 'unlink', path: src },
        ];
        const r = await runBatch(ops);
        expect([...r]).toEqual([0, 0, ENOENT, ECANCELED]);
        expect(fs.readFileSync(dest)).toEqual(Buffer.concat([Buffer.from('head:'), big]));
        expect(fs.readFileSync(path.join(dir, 'empty'))).toEqual(fs.readFileSync(dest));
        expect(firstFailure(ops, r)?.syscall).toBe('write');
        expect(fs.existsSync(src)).toBe(true);
      });

      it(
        'writes at a position (the offset unchanged) and ' + 'fsyncs a directory through a descriptor held open',
        async () => {
          const file = path.join(dir, 'lock');
          fs.writeFileSync(file, 'an old, longer line\n');
          const fd = fs.openSync(file, fs.constants.O_RDWR);
          const dfd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
          try {
            const ops: BatchOp[] = [
              { op: 'pwrite', fd, position: 0, data: Buffer.from('new\n'), datasync: true, must: true },
              { op: 'pwrite', fd, position: 8, data: Buffer.from('X'), datasync: false },
              { op: 'fsyncDir', path: dir, fd: dfd, must: true },
              { op: 'fsyncDir', path: path.join(dir, 'missing'), fd: dfd },
            ];
            expect([...(await runBatch(ops))]).toEqual([0, 0, 0, 0]);
            expect(fs.readFileSync(file, 'utf8')).toBe('new\nld, Xonger line\n');
            // The descriptor's own offset did not move.
            const buf = Buffer.alloc(4);
            expect(fs.readSync(fd, buf, 0, 4, null)).toBe(4);
            expect(buf.toString()).toBe('new\n');
            const bad: BatchOp[] = [
              { op: 'pwrite', fd: 1_000_000, position: 0, data: Buffer.from('x'), datasync: true, must: true },
              { op: 'fsyncDir', path: dir },
            ];
            const r = await runBatch(bad);
            expect([...r]).toEqual([-os.constants.errno.EBADF, ECANCELED]);
            expect(firstFailure(bad, r)?.syscall).toBe('write');
          } finally {
            fs.closeSync(fd);
            fs.closeSync(dfd);
          }
        },
      );

      // Only the pool's batches run side by side: the caller's thread runs one batch at a time.
      if (thread === 'pool') {
        it('splits independent operations over several batches and keeps their order in the results', async () => {
          const ops: BatchOp[] = Array.from({ length: 40 }, (_, i) => ({
            op: 'unlink',
            path: path.join(dir, `f${i}`),
          }));
          for (let i = 0; i < 40; i += 3) fs.writeFileSync(path.join(dir, `f${i}`), '');
          const r = await runBatchesAtOnce(ops);
          expect([...r]).toEqual(ops.map((_, i) => (i % 3 === 0 ? 0 : ENOENT)));
        });
      }
    },
  );
}

describe('firstFailedStep', () => {
  it('names the first step of a batch that failed, past the missing files that are no failure', () => {
    const step = (n: number, must = true): BatchOp[] =>
      Array.from({ length: n }, (_, i) => ({ op: 'unlink', path: `/x/${n}-${i}`, missingOk: i === 0, must }));
    const steps = [step(2), step(3), step(1)];
    expect(firstFailedStep(steps, 0, Int32Array.from([ENOENT, 0, 0, 0, 0, 0]))).toBeUndefined();
    const r = firstFailedStep(steps, 0, Int32Array.from([0, 0, 0, EEXIST, ECANCELED, ECANCELED]));
    expect(r?.step).toBe(1);
    expect(r?.err.code).toBe('EEXIST');
    expect(r?.err.path).toBe('/x/3-1');
    // From a later step on: the results are those of the steps from there.
    expect(firstFailedStep(steps, 1, Int32Array.from([0, 0, 0, EEXIST]))?.step).toBe(2);
  });
});
