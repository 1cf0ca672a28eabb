/**
 * Concurrent processors: two `queue-process` on one queue.
 *
 * Promise checked: exactly one holds the lock; the other fails at once (without waiting for the
 * lock) with one clear error line and exit status 1, having run nothing; no job runs twice.
 * The reference takes the same flock(2) lock, so it is refused (or refuses us) the same way.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import { Queue } from '../../src/queue/queue.js';
import {
  fspl,
  HAVE_REF,
  lines,
  packet,
  type RunResult,
  readLog,
  record,
  recorder,
  startFspl,
  tempDir,
  waitFor,
} from './common.js';

const LOCK_ERROR = /^Error: Could not obtain lock on .*nextseq\.lock: it is held by another process$/;

function isLockRefusal(r: RunResult): boolean {
  const l = lines(r.stderr);
  return r.code === 1 && l.length === 1 && LOCK_ERROR.test(l[0]!);
}

describe('two queue-process on one queue', () => {
  test('while one runs a job, a second one (ours or the reference) is refused at once and runs nothing', {
    timeout: 60_000,
  }, async () => {
    const dir = tempDir();
    const qdir = path.join(dir, 'q');
    const log = path.join(dir, 'log');
    const q = Queue.init(qdir);
    // The first job of each round waits for ./release, so the first processor holds the lock
    // until the second one has finished.
    const command = recorder(
      dir,
      log,
      `if [ "$FSPL_SET_HOLD" = 1 ]; then : > '${dir}/started'; ` +
        `while [ ! -e '${dir}/release' ]; do sleep 0.02; done; fi\n`,
    );
    const ROUNDS = 3;
    const PER_ROUND = 10;
    const refusals: Record<string, number> = { ours: 0, ref: 0 };
    let seq = 1;
    for (let round = 0; round < ROUNDS; round++) {
      fs.rmSync(path.join(dir, 'started'), { force: true });
      fs.rmSync(path.join(dir, 'release'), { force: true });
      for (let i = 0; i < PER_ROUND; i++, seq++) {
        const cmd = {
          kind: 'Command' as const,
          params: [],
          env: i === 0 ? [[Buffer.from('HOLD'), Buffer.from('1')] as [Buffer, Buffer]] : [],
        };
        q.writeBuffer(
          Buffer.concat([
            encodeHeader({ seq: BigInt(seq), ctime: { secs: 1700000000n, nanos: 0 }, cmd }),
            Buffer.from('x'),
          ]),
        );
      }
      const first = startFspl(['queue-process', '-q', qdir, command], { timeoutMs: 30_000 });
      await waitFor(() => fs.existsSync(path.join(dir, 'started')), 'the first processor to start its job');
      for (const impl of HAVE_REF ? (['ours', 'ref'] as const) : (['ours'] as const)) {
        const second = await fspl(['queue-process', '-q', qdir, command], { impl, timeoutMs: 20_000 });
        // It returned while the first still holds the lock: it did not wait for it.
        expect(first.child.exitCode, 'the first processor is still running').toBeNull();
        if (impl === 'ours') expect(isLockRefusal(second), `ours: ${second.code} ${second.stderr}`).toBe(true);
        else expect(second.code, second.stderr).toBe(1);
        refusals[impl]!++;
      }
      fs.writeFileSync(path.join(dir, 'release'), '');
      const r = await first.done;
      expect(r.code, r.stderr).toBe(0);
    }
    const ran = readLog(log);
    record('concurrent-processors-held', undefined, {
      rounds: ROUNDS,
      secondRunsRefusedOurs: refusals.ours,
      secondRunsRefusedReference: refusals.ref,
      jobs: seq - 1,
      executions: ran.length,
      ranTwice: ran.length - new Set(ran).size,
    });
    expect(ran).toEqual(Array.from({ length: seq - 1 }, (_, i) => i + 1));
  });

  test('two started at the same moment, many times: one gets the lock, and no job runs twice', {
    timeout: 90_000,
  }, async () => {
    const dir = tempDir();
    const qdir = path.join(dir, 'q');
    const log = path.join(dir, 'log');
    const q = Queue.init(qdir);
    // Jobs take a little while, so that the two runs overlap.
    const command = recorder(dir, log, 'sleep 0.02\n');
    const ROUNDS = 8;
    const PER_ROUND = 10;
    let seq = 1;
    const tally = { oneRefused: 0, bothRanInTurn: 0, otherOutcome: 0, refusedByReference: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < PER_ROUND; i++, seq++) q.writeBuffer(packet(seq));
      // Half the rounds race ours against the reference (they share the flock(2) lock).
      const other = HAVE_REF && round % 2 === 1 ? 'ref' : 'ours';
      const a = startFspl(['queue-process', '-q', qdir, command], { timeoutMs: 30_000 });
      const b = startFspl(['queue-process', '-q', qdir, command], { impl: other, timeoutMs: 30_000 });
      const [ra, rb] = await Promise.all([a.done, b.done]);
      const refusedA = isLockRefusal(ra!);
      const refusedB = other === 'ours' ? isLockRefusal(rb!) : rb!.code === 1;
      if (refusedA !== refusedB) {
        tally.oneRefused++;
        if (refusedA && other === 'ref') tally.refusedByReference++;
        expect((refusedA ? rb! : ra!).code, 'the other one succeeds').toBe(0);
      } else if (ra!.code === 0 && rb!.code === 0) {
        tally.bothRanInTurn++; // the first was done before the second looked: not a conflict
      } else {
        tally.otherOutcome++;
        expect.fail(`round ${round + 1}: unexpected outcome ${ra!.code}/${rb!.code}: ${ra!.stderr} / ${rb!.stderr}`);
      }
    }
    const ran = readLog(log);
    record('concurrent-processors-race', undefined, {
      rounds: ROUNDS,
      roundsAgainstReference: HAVE_REF ? ROUNDS / 2 : 0,
      ...tally,
      jobs: seq - 1,
      executions: ran.length,
      ranTwice: ran.length - new Set(ran).size,
      outOfOrder: ran.filter((s, i) => s !== i + 1).length,
    });
    expect(ran).toEqual(Array.from({ length: seq - 1 }, (_, i) => i + 1));
    expect(tally.otherOutcome).toBe(0);
  });
});
