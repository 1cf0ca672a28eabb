/**
 * The end of a net run on a failing disk: the journal, emptied as the run ends, can't be made
 * durable (its fsync fails). Every commit in it is complete, so the run's work is done: it ends
 * with status 0 and a warning, and the next run finds nothing to redo. (Found by
 * outbox-workloads.test.ts: before, the run exited 1 after draining everything.)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Net } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN } from '../helpers.js';
import { checkNumbers, keysOf } from '../net/fault-check.js';
import { type FaultyFs, faultsMissing, mountFaulty } from './harness.js';

const fspl = (...args: string[]) =>
  spawnSync(process.execPath, [FSPL_BIN, ...args], { encoding: 'utf8', timeout: 20_000 });

describeIfPresent(
  'the end of a net run on a failing disk',
  faultsMissing(),
  { what: 'fault-injection tests', note: 'apt-get install fuse3 libfuse3-dev gcc' },
  () => {
    let ffs: FaultyFs;
    beforeAll(async () => {
      ffs = await mountFaulty();
    });
    afterAll(async () => {
      await ffs?.unmount();
    });

    test('the journal cannot be emptied as the run ends (fsync EIO): the run ' +
      'ends with status 0 and a warning; the next finds nothing to redo', async () => {
      const dir = path.join(ffs.root, 'end');
      fs.mkdirSync(dir);
      const netFile = path.join(dir, 'net.yaml');
      fs.writeFileSync(netFile, 'places: { a: {}, b: {} }\ntransitions:\n  t: { in: a, out: b, run: [cat] }\n');
      const net = Net.load(netFile);
      net.init();
      await net.put('a', Buffer.from('x\n'), { key: 'k0' });
      expect(fspl('net', 'run', '--drain', '-l', 'error', netFile).status).toBe(0);
      await net.put('a', Buffer.from('y\n'), { key: 'k1' });
      const journal = path.join(dir, 'net.state/journal');
      // The journal's fsyncs in this run: the commit's line, then its end, then the end of the run's.
      await ffs.fault({ op: 'fsync', error: 'EIO', when: { nth: 3 }, path: journal });
      const r = fspl('net', 'run', '--drain', '-l', 'warn', netFile);
      const fired = (await ffs.faultCounters()).faults;
      await ffs.clear();
      expect(fired, 'the fault fired').toBeGreaterThan(0);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/journal could not be emptied \(Input\/output error/);
      const again = fspl('net', 'run', '--drain', '-l', 'error', netFile);
      expect(again.status, again.stderr).toBe(0);
      expect(await keysOf(path.join(dir, 'places/b'))).toEqual(['k0', 'k1']);
      await checkNumbers(dir, ['a'], ['b']);
    }, 60_000);
  },
);
