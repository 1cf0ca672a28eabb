/**
 * The fault file system's own controls (harness.ts, ../powercut/pcfs.c's second mode): each kind
 * of rule fires when it says and only then, on the paths it names; a failed operation changes
 * nothing; a failed fsync loses its data as Linux does (the next fsync lies); and a small tmpfs
 * really fills.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { type FaultyFs, faultsMissing, mountFaulty, mountTmpfs, tmpfsMissing } from './harness.js';

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code;
  }
};

describeIfPresent('fault file system (pcfs, fault mode)', faultsMissing(), { what: 'fault-injection tests' }, () => {
  let ffs: FaultyFs;
  beforeAll(async () => {
    ffs = await mountFaulty();
  });
  afterAll(async () => {
    await ffs?.unmount();
  });
  const p = (name: string) => path.join(ffs.root, name);

  test('nth: the Nth matching call fails, once; the others pass', async () => {
    await ffs.fault({ op: 'create', error: 'ENOSPC', when: { nth: 2 } });
    expect(code(() => fs.writeFileSync(p('a1'), 'x'))).toBeUndefined();
    expect(code(() => fs.writeFileSync(p('a2'), 'x'))).toBe('ENOSPC');
    expect(fs.existsSync(p('a2')), 'a failed create makes nothing').toBe(false);
    expect(code(() => fs.writeFileSync(p('a3'), 'x'))).toBeUndefined();
    expect((await ffs.faultCounters()).rules, 'spent').toBe(0);
  });

  test('always, on a path glob, until clear', async () => {
    fs.mkdirSync(p('q'));
    fs.writeFileSync(p('q/nextseq.temp'), '2\n');
    fs.writeFileSync(p('other.temp'), '2\n');
    await ffs.fault({ op: 'rename', error: 'EIO', when: 'always', path: `${ffs.root}/q/nextseq` });
    expect(code(() => fs.renameSync(p('other.temp'), p('other')))).toBeUndefined();
    for (let i = 0; i < 3; i++) expect(code(() => fs.renameSync(p('q/nextseq.temp'), p('q/nextseq')))).toBe('EIO');
    expect(fs.existsSync(p('q/nextseq.temp'))).toBe(true);
    await ffs.clear();
    expect(code(() => fs.renameSync(p('q/nextseq.temp'), p('q/nextseq')))).toBeUndefined();
  });

  test('write, mkdir and unlink fail as told; the failed ones change nothing', async () => {
    fs.writeFileSync(p('w'), 'old');
    await ffs.fault({ op: 'write', error: 'ENOSPC', when: { nth: 1 }, path: '/w' });
    expect(code(() => fs.writeFileSync(p('w'), 'new'))).toBe('ENOSPC');
    await ffs.fault({ op: 'mkdir', error: 'ENOSPC', when: { nth: 1 } });
    expect(code(() => fs.mkdirSync(p('d')))).toBe('ENOSPC');
    expect(fs.existsSync(p('d'))).toBe(false);
    await ffs.fault({ op: 'unlink', error: 'EIO', when: { nth: 1 } });
    expect(code(() => fs.unlinkSync(p('w')))).toBe('EIO');
    expect(fs.existsSync(p('w'))).toBe(true);
  });

  test('rate with a seed: the same seed makes the same choices, about rate of them', async () => {
    const run = async (seed: number) => {
      await ffs.clear();
      await ffs.fault({ op: 'create', error: 'EIO', when: { rate: 0.3, seed }, path: '/r/*' });
      fs.rmSync(p('r'), { recursive: true, force: true });
      fs.mkdirSync(p('r'));
      return Array.from({ length: 200 }, (_, i) => (code(() => fs.writeFileSync(p(`r/${i}`), '')) ? 1 : 0)).join('');
    };
    const a = await run(7);
    expect(await run(7)).toBe(a);
    expect(await run(8)).not.toBe(a);
    const failed = [...a].filter((c) => c === '1').length;
    expect(failed).toBeGreaterThan(30);
    expect(failed).toBeLessThan(90);
    await ffs.clear();
  });

  test('a failed fsync loses the data: the next fsync says success, and a cut shows the old content', async () => {
    fs.writeFileSync(p('f'), 'durable\n');
    await ffs.sync();
    const fd = fs.openSync(p('f'), 'r+');
    fs.writeSync(fd, 'CHANGED\n', 0);
    await ffs.fault({ op: 'fsync', error: 'EIO', when: { nth: 1 } });
    expect(code(() => fs.fsyncSync(fd))).toBe('EIO');
    const before = await ffs.faultCounters();
    expect(
      code(() => fs.fsyncSync(fd)),
      'the retry is told success',
    ).toBeUndefined();
    expect((await ffs.faultCounters()).lies).toBe(before.lies + 1);
    expect(fs.readFileSync(p('f'), 'utf8'), 'reads still see the new data').toBe('CHANGED\n');
    fs.closeSync(fd);
    await ffs.cut();
    expect(fs.readFileSync(p('f'), 'utf8'), 'the retried fsync was a lie').toBe('durable\n');
  });

  test('a file written whole again after its failed fsync is durable at the next fsync', async () => {
    fs.writeFileSync(p('g'), 'one\n');
    await ffs.sync();
    const fd = fs.openSync(p('g'), 'r+');
    fs.writeSync(fd, 'two\n', 0);
    await ffs.fault({ op: 'fsync', error: 'EIO', when: { nth: 1 } });
    expect(code(() => fs.fsyncSync(fd))).toBe('EIO');
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, 'three\n', 0);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    await ffs.cut();
    expect(fs.readFileSync(p('g'), 'utf8')).toBe('three\n');
  });

  test(
    'a failed fsync of a directory makes nothing durable, nor ' +
      'does its retry; a name changed after it is durable at the next',
    async () => {
      fs.mkdirSync(p('dd'));
      await ffs.sync();
      fs.writeFileSync(p('dd/x'), '');
      const dfd = fs.openSync(p('dd'), 'r');
      await ffs.fault({ op: 'fsync', error: 'EIO', when: { nth: 1 }, path: '/dd' });
      expect(code(() => fs.fsyncSync(dfd))).toBe('EIO');
      expect(
        code(() => fs.fsyncSync(dfd)),
        'the retry is told success',
      ).toBeUndefined();
      fs.closeSync(dfd);
      await ffs.cut();
      expect(fs.readdirSync(p('dd')), 'the retried fsync was a lie').toEqual([]);
      fs.writeFileSync(p('dd/y'), '');
      const dfd2 = fs.openSync(p('dd'), 'r');
      fs.fsyncSync(dfd2);
      fs.closeSync(dfd2);
      await ffs.cut();
      expect(fs.readdirSync(p('dd'))).toEqual(['y']);
    },
  );

  test('the control file refuses a malformed rule; the calls are counted', async () => {
    await expect(ffs.control('fault frobnicate EIO always')).rejects.toThrow(/EINVAL|invalid/i);
    await expect(ffs.control('fault write EIO rate=0.5')).rejects.toThrow(/EINVAL|invalid/i); // no seed
    const c = await ffs.faultCounters();
    expect(c.calls.create).toBeGreaterThan(0);
    expect(c.calls.fsync).toBeGreaterThan(0);
    expect(c.faults).toBeGreaterThan(0);
  });
});

describeIfPresent('a small tmpfs', tmpfsMissing(), { what: 'full-disk tests' }, () => {
  test('fills up, and frees again', () => {
    const t = mountTmpfs('128k');
    try {
      t.fill();
      expect(t.available()).toBe(0);
      expect(code(() => fs.writeFileSync(path.join(t.root, 'more'), Buffer.alloc(8192)))).toBe('ENOSPC');
      t.free();
      expect(t.available()).toBeGreaterThan(64 * 1024);
      fs.writeFileSync(path.join(t.root, 'more'), Buffer.alloc(8192));
    } finally {
      t.unmount();
    }
    expect(fs.existsSync(t.root)).toBe(false);
  });
});
