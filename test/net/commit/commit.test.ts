/**
 * The group commit's one batch (src/net/commit/commit.ts): steps 1 to 5 of a group go to the pool
 * as one batch of file operations, in the table's order. A failure there must stop what depends
 * on it, as two batches did: a failure up to step 3 cancels the renames and consumes after it;
 * a failure in step 4 leaves the recorded group for the next run's recovery. Failures are
 * injected by changing one operation of the batch on its way to the real runBatch (fs-batch.ts),
 * so that the system call itself fails.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { BatchOp } from '../../../src/sys/fs-batch.js';
import { makeNet, tokensIn } from '../helpers.js';

/** Changes the next batch it matches (then stops): returns the batch's new operations, or undefined to leave it. */
let inject: ((ops: readonly BatchOp[]) => BatchOp[] | undefined) | undefined;

vi.mock('../../../src/sys/fs-batch.js', async (importOriginal) => {
  const m = await importOriginal<typeof import('../../../src/sys/fs-batch.js')>();
  return {
    ...m,
    runBatch: (ops: readonly BatchOp[]) => {
      const changed = inject?.(ops);
      if (changed) inject = undefined;
      return m.runBatch(changed ?? ops);
    },
  };
});

afterEach(() => {
  inject = undefined;
});

const YAML = `
places: { a: {}, b: {} }
transitions:
  t: { in: a, out: b, run: [cat] }
`;

async function netWithTokens(n: number) {
  const made = makeNet(YAML);
  for (let i = 0; i < n; i++) await made.net.put('a', Buffer.from(`p${i}\n`), { key: `k${i}` });
  return made;
}

const jobsIn = (dir: string, place: string) => fs.readdirSync(path.join(dir, 'places', place, 'jobs'));

/** The batch's operations, with the one `pick` finds changed by `change`; undefined when none matches. */
function changeOne(
  ops: readonly BatchOp[],
  pick: (o: BatchOp) => boolean,
  change: (o: BatchOp) => BatchOp,
): BatchOp[] | undefined {
  const at = ops.findIndex(pick);
  return at < 0 ? undefined : ops.map((o, i) => (i === at ? change(o) : o));
}

describe('the group commit in one batch', () => {
  test(
    'a rename (step 4) failing stops the run after the group ' +
      'is recorded; the next run publishes and consumes it once',
    async () => {
      const { dir, net } = await netWithTokens(3);
      let merged = false;
      inject = (ops) => {
        const changed = changeOne(
          ops,
          (o) => o.op === 'rename' && o.from.endsWith('.part'),
          // Renamed under a file, not a directory: ENOTDIR (an ENOENT would be no failure here: a
          // rename whose source is gone was done before, in recovery).
          (o) => (o.op === 'rename' ? { ...o, to: path.join(dir, 'net.yaml', 'x') } : o),
        );
        // The journal's line and the rename in one batch: steps 1 to 5 went together.
        if (changed) merged = ops.some((o) => o.op === 'append');
        return changed;
      };
      await expect(net.run({ drain: true, workers: 1 })).rejects.toThrow(/ENOTDIR: rename/);
      expect(merged).toBe(true);
      // Recorded, not published: the part stays for recovery, and its input was not consumed.
      expect(jobsIn(dir, 'b').filter((n) => n.endsWith('.part'))).toHaveLength(1);
      expect(jobsIn(dir, 'a').filter((n) => n.endsWith('.fspl'))).toHaveLength(3);
      await net.run({ drain: true, workers: 1 });
      expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual(['p0\n', 'p1\n', 'p2\n']);
      expect(jobsIn(dir, 'a').filter((n) => n.endsWith('.fspl'))).toEqual([]);
      expect(jobsIn(dir, 'b').filter((n) => !n.endsWith('.fspl'))).toEqual([]);
    },
  );

  test(
    'a part that cannot be written (step 1) cancels the ' + 'rest of the batch: nothing recorded, renamed or consumed',
    async () => {
      const { dir, net } = await netWithTokens(3);
      let renamesAfter = false;
      inject = (ops) => {
        const at = ops.findIndex((o) => (o.op === 'writeFileFrom' || o.op === 'writeFile') && o.path.endsWith('.part'));
        if (at < 0) return undefined;
        renamesAfter = ops.slice(at).some((o) => o.op === 'rename' && o.from.endsWith('.part'));
        return ops.map((o, i) =>
          i === at && (o.op === 'writeFileFrom' || o.op === 'writeFile')
            ? { ...o, path: path.join(dir, 'no-such-dir', 'x.part') }
            : o,
        );
      };
      await expect(net.run({ drain: true, workers: 1 })).rejects.toThrow(/ENOENT/);
      expect(renamesAfter).toBe(true);
      expect(jobsIn(dir, 'b')).toEqual([]);
      expect(jobsIn(dir, 'a').filter((n) => n.endsWith('.fspl'))).toHaveLength(3);
      await net.run({ drain: true, workers: 1 });
      expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual(['p0\n', 'p1\n', 'p2\n']);
      expect(jobsIn(dir, 'a').filter((n) => n.endsWith('.fspl'))).toEqual([]);
    },
  );
});
