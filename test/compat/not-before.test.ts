/**
 * Not before a time against the reference: packets written by `prepare --not-before` (the
 * not_before header key) are read, listed and processed by Filespooler 1.2.2 as any packet: it
 * ignores the key, and so runs them at once (docs/compatibility.md says so). Ours waits.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeCompat, fspl, listedSeqs, tmpDir } from './harness.js';

describeCompat('not-before key', () => {
  test('the reference reads, lists and runs packets carrying not_before (it does not wait); ours waits', {
    timeout: 60_000,
  }, async () => {
    const dir = tmpDir();
    const seq = path.join(dir, 'seq');
    const log = path.join(dir, 'log');
    const script = path.join(dir, 'rec.sh');
    fs.writeFileSync(script, `#!/bin/sh\necho "$FSPL_SEQ $(cat)" >> '${log}'\n`, { mode: 0o755 });
    const packets: Buffer[] = [];
    for (const [i, extra] of [
      ['1', []],
      ['2', ['--not-before', '+1h']],
      ['3', ['--not-before', '2099-01-01T00:00:00+02:00', '--seal']],
    ] as const) {
      const p = await fspl('ours', ['prepare', '-s', seq, ...extra, '-i', '-'], { stdin: `payload ${i}` });
      expect(p.code, p.stderr).toBe(0);
      packets.push(Buffer.from(p.stdout));
    }
    const info = await fspl('ref', ['stdin-info'], { stdin: packets[1] });
    expect(info.code, info.stderr).toBe(0);
    expect(info.stdout.toString()).toMatch(/^FSPL_SEQ=2\n/m);

    // The same packets in a queue of each: ours stops at job 2, the reference runs all three.
    for (const impl of ['ours', 'ref'] as const) {
      const q = path.join(dir, impl);
      expect((await fspl(impl, ['queue-init', '-q', q])).code).toBe(0);
      for (const p of packets) expect((await fspl('ref', ['queue-write', '-q', q], { stdin: p })).code).toBe(0);
      const ls = await fspl('ref', ['queue-ls', '-q', q]);
      expect(ls.code, ls.stderr).toBe(0);
      expect(listedSeqs(ls.stdout).sort()).toEqual(['1', '2', '3']);
      fs.writeFileSync(log, '');
      const run = await fspl(impl, ['queue-process', '-q', q, script]);
      expect(run.code, run.stderr.toString()).toBe(0);
      expect(fs.readFileSync(log, 'utf8')).toBe(
        impl === 'ref' ? '1 payload 1\n2 payload 2\n3 payload 3\n' : '1 payload 1\n',
      );
      expect(fs.readFileSync(path.join(q, 'nextseq'), 'utf8').trim()).toBe(impl === 'ref' ? '4' : '2');
    }
  });
});
