/**
 * A full disk or an I/O error at each step of a group commit (src/net/commit/commit.ts, and the
 * table of commit-faults.ts): the run goes on, the group is undone or carried out later, and in
 * the end every token has moved exactly once and no number taken from a sendseq is stranded
 * (each is a token or a NOP, or was consumed).
 *
 * The faults are injected at the function level: one operation of one batch (fs-batch.ts) is made
 * to fail with ENOSPC or EIO, either instead of running (a write the disk refused) or after running
 * (an fsync that failed: what it was to make durable may or may not be on the disk). The real
 * disks' faults are in test/faults/net-disk-full.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { NetEvent } from '../../../src/net/run/options.js';
import type { BatchOp } from '../../../src/sys/fs-batch.js';
import { checkNumbers, keysOf } from '../fault-check.js';
import { makeNet } from '../helpers.js';

/** The fault to inject into the next batch holding an operation it picks (once). */
let fault:
  | { pick: (o: BatchOp, ops: readonly BatchOp[], i: number) => boolean; errno: number; ran: boolean; hit?: BatchOp }
  | undefined;

vi.mock('../../../src/sys/fs-batch.js', async (importOriginal) => {
  const m = await importOriginal<typeof import('../../../src/sys/fs-batch.js')>();
  const ECANCELED = -os.constants.errno.ECANCELED;
  return {
    ...m,
    runBatch: async (ops: readonly BatchOp[]) => {
      const f = fault;
      const at = f && !f.hit ? ops.findIndex((o, i) => f.pick(o, ops, i)) : -1;
      if (!f || at < 0) return m.runBatch(ops);
      f.hit = ops[at];
      // The operations before it run; it fails (having run, for an fsync that failed, or not);
      // after a `must` one nothing runs, as fs-batch does.
      const before = await m.runBatch(ops.slice(0, at));
      const failedEarlier = before.some((r, i) => r < 0 && ops[i]!.must);
      const self = f.ran && !failedEarlier ? (await m.runBatch([ops[at]!]))[0]! : 0;
      const mine = self < 0 ? self : -f.errno;
      const rest =
        failedEarlier || ops[at]!.must
          ? new Int32Array(ops.length - at - 1).fill(ECANCELED)
          : await m.runBatch(ops.slice(at + 1));
      const out = new Int32Array(ops.length);
      out.set(before, 0);
      out[at] = failedEarlier ? ECANCELED : mine;
      out.set(rest, at + 1);
      return out;
    },
  };
});

afterEach(() => {
  fault = undefined;
  vi.restoreAllMocks();
});

const { ENOSPC, EIO } = os.constants.errno;

/** A chain through a sequence place (b) into a sink (c): a number stranded in either would show. */
const YAML = `
places: { a: {}, b: {}, c: {} }
transitions:
  t1: { in: a, out: b, run: [cat] }
  t2: { in: b, out: c, run: [cat] }
`;

const isPart = (p: string) => p.endsWith('.part');
const seqfile = (o: BatchOp, name: string) =>
  (o.op === 'rename' && path.basename(o.to) === name) ||
  (o.op === 'writeFile' && path.basename(o.path) === `${name}.temp`);

/** The steps of a commit, each with the operation a fault is injected at. */
const STEPS: Array<[string, (o: BatchOp, ops: readonly BatchOp[], i: number) => boolean, number, boolean]> = [
  [
    'staging: a part refused (ENOSPC)',
    (o) => (o.op === 'writeFile' || o.op === 'writeFileFrom') && isPart(o.path),
    ENOSPC,
    false,
  ],
  [
    "staging: the fsync of the parts' jobs/ fails (EIO)",
    (o, ops) => o.op === 'fsyncDir' && ops.some((x) => x.op === 'append'),
    EIO,
    true,
  ],
  [
    'staging: sendseq.temp refused (ENOSPC)',
    (o) => o.op === 'writeFile' && path.basename(o.path) === 'sendseq.temp',
    ENOSPC,
    false,
  ],
  ['the numbers: the rename of sendseq fails (EIO)', (o) => seqfile(o, 'sendseq') && o.op === 'rename', EIO, false],
  [
    "the numbers: sendseq renamed, its directory's fsync fails (EIO)",
    (o, ops, i) => o.op === 'fsyncDir' && i > 0 && seqfile(ops[i - 1]!, 'sendseq'),
    EIO,
    true,
  ],
  ["the journal's line refused (ENOSPC)", (o) => o.op === 'append', ENOSPC, false],
  ["the journal's line written, its fsync fails (EIO)", (o) => o.op === 'append', EIO, true],
  ['publish: a rename fails (EIO)', (o) => o.op === 'rename' && isPart(o.from), EIO, false],
  [
    'publish: the output jobs/ fsync fails (EIO)',
    (o, ops, i) =>
      o.op === 'fsyncDir' && i > 0 && ops[i - 1]!.op === 'rename' && isPart((ops[i - 1] as { from: string }).from),
    EIO,
    true,
  ],
  [
    'consume: nextseq.temp refused (ENOSPC)',
    (o) => o.op === 'writeFile' && path.basename(o.path) === 'nextseq.temp',
    ENOSPC,
    false,
  ],
  [
    "consume: nextseq renamed, its directory's fsync fails (EIO)",
    (o, ops, i) => o.op === 'fsyncDir' && i > 0 && seqfile(ops[i - 1]!, 'nextseq'),
    EIO,
    true,
  ],
  ['consume: an unlink fails (EIO)', (o) => o.op === 'unlink' && o.path.endsWith('.fspl'), EIO, false],
];

async function runThrough(n: number, inject: () => void) {
  const { dir, net } = makeNet(YAML);
  for (let i = 0; i < n; i++) await net.put('a', Buffer.from(`p${i}\n`), { key: `k${i}` });
  const events: NetEvent[] = [];
  inject();
  const summary = await net.run({ drain: true, workers: 2, onEvent: (e) => events.push(e) });
  return { dir, summary, events };
}

describe('a full disk or an I/O error at each step of a commit', () => {
  test.each(STEPS)('%s: the run goes on; every token once, no number stranded', async (_name, pick, errno, ran) => {
    const { dir, summary, events } = await runThrough(6, () => {
      fault = { pick, errno, ran };
    });
    expect(fault?.hit, 'the fault was injected').toBeDefined();
    expect(summary.leftovers).toEqual([]);
    expect(events.filter((e) => e.type === 'io-error').length).toBeGreaterThan(0);
    expect(await keysOf(path.join(dir, 'places/c'))).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5']);
    await checkNumbers(dir, ['a', 'b'], ['c']);
  });

  test('the end record refused (ENOSPC): the run goes on, and the journal reads back whole', async () => {
    const { Journal } = await import('../../../src/net/commit/journal.js');
    let refused = 0;
    const write = fs.writeSync;
    vi.spyOn(fs, 'writeSync').mockImplementation(((
      fd: number,
      data: string | NodeJS.ArrayBufferView,
      ...rest: unknown[]
    ) => {
      if (typeof data === 'string' && data.includes('"t":"done"') && refused++ === 0) {
        write(fd, data.slice(0, 5)); // cut short: a fragment on the disk
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -ENOSPC });
      }
      return (write as (...a: unknown[]) => number)(fd, data, ...rest);
    }) as typeof fs.writeSync);
    const { dir, summary } = await runThrough(6, () => {});
    expect(refused).toBeGreaterThan(0);
    expect(summary.leftovers).toEqual([]);
    expect(await keysOf(path.join(dir, 'places/c'))).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5']);
    await checkNumbers(dir, ['a', 'b'], ['c']);
    expect(Journal.pending(path.join(dir, 'net.state', 'journal'))).toEqual([]);
  });

  test(
    'a line cut short is never glued to the next one: ' + 'the journal starts the next on a line of its own',
    async () => {
      const { Journal } = await import('../../../src/net/commit/journal.js');
      const { runBatch } = await import('../../../src/sys/fs-batch.js');
      const d = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-journal-'));
      try {
        const file = path.join(d, 'journal');
        const j = new Journal(file);
        const rec = (f: string) => [{ firing: f, transition: 't', outputs: [], inputs: [] }];
        // A fragment of a line, as a full disk leaves it, and the rollback of it failing.
        fs.appendFileSync(file, '{"t":"group","cs":[{"fir');
        const mark = j.mark();
        vi.spyOn(fs, 'ftruncateSync').mockImplementationOnce(() => {
          throw Object.assign(new Error('EIO'), { code: 'EIO' });
        });
        expect(() => j.rollback(mark)).toThrow(/EIO/);
        await runBatch([j.recordOp(rec('f2'))]);
        expect(Journal.pending(file).map((c) => c.firing)).toEqual(['f2']);
        j.close();
      } finally {
        fs.rmSync(d, { recursive: true, force: true });
      }
    },
  );
});
