/**
 * Retries and failed-jobs queues against the reference (issue 41): packets with the new header
 * keys (`retries` from prepare --retries, `failed` on a failed-jobs queue's packets) are read,
 * listed and processed by Filespooler 1.2.2 as any packet; and queue-process without the new
 * options leaves a queue exactly as the reference does (no new file in it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeCompat, fspl, listedSeqs, tmpDir } from './harness.js';

/** A command that logs its job and fails for FSPL_SET_FAIL=1. */
function recorder(dir: string): { script: string; log: string } {
  const log = path.join(dir, 'log');
  const script = path.join(dir, 'rec.sh');
  fs.writeFileSync(
    script,
    `#!/bin/sh\necho "$FSPL_SEQ $FSPL_SET_FAIL $(cat)" >> '${log}'\n[ "$FSPL_SET_FAIL" = 1 ] && exit 3\nexit 0\n`,
    { mode: 0o755 },
  );
  return { script, log };
}

describeCompat('retry keys', () => {
  test('the reference reads, lists and runs packets written with retries and failed keys', {
    timeout: 60_000,
  }, async () => {
    const dir = tmpDir();
    const q = path.join(dir, 'q');
    const F = path.join(dir, 'F');
    const { script, log } = recorder(dir);
    expect((await fspl('ours', ['queue-init', '-q', q])).code).toBe(0);
    const seq = path.join(dir, 'seq');
    for (const [i, fail] of [
      ['1', '0'],
      ['2', '1'],
      ['3', '0'],
    ] as const) {
      const p = await fspl(
        'ours',
        ['prepare', '-s', seq, '--retries', '2', ...(i === '3' ? ['--seal'] : []), '-i', '-'],
        {
          stdin: `payload ${i}`,
          env: { FSPL_SET_FAIL: fail },
        },
      );
      expect(p.code, p.stderr).toBe(0);
      expect((await fspl('ours', ['queue-write', '-q', q], { stdin: p.stdout })).code).toBe(0);
    }
    // Ours: job 2 fails twice (retries 1, no delay) and goes to F; 1 and 3 run.
    const ran = await fspl('ours', [
      'queue-process',
      '-q',
      q,
      '--retries',
      '1',
      '--retry-delay',
      '0',
      '--failed-to',
      F,
      script,
    ]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(fs.readFileSync(log, 'utf8')).toBe('1 0 payload 1\n2 1 payload 2\n2 1 payload 2\n3 0 payload 3\n');
    const [moved] = fs.readdirSync(path.join(F, 'jobs'));
    const packet = fs.readFileSync(path.join(F, 'jobs', moved!));

    // The reference: stdin-info on the moved packet, then a queue of its own with it and new
    // packets carrying `retries`, listed and processed.
    const info = await fspl('ref', ['stdin-info'], { stdin: packet });
    expect(info.code, info.stderr).toBe(0);
    expect(info.stdout.toString()).toMatch(/^FSPL_SEQ=1\n/m);
    const r = path.join(dir, 'r');
    expect((await fspl('ref', ['queue-init', '-q', r])).code).toBe(0);
    expect((await fspl('ref', ['queue-write', '-q', r], { stdin: packet })).code).toBe(0);
    fs.writeFileSync(path.join(dir, 'seq2'), '2\n');
    const p2 = await fspl('ours', ['prepare', '-s', path.join(dir, 'seq2'), '--retries', '7', '--seal', '-i', '-'], {
      stdin: 'payload 2b',
      env: { FSPL_SET_FAIL: '0' },
    });
    const two = Buffer.from(p2.stdout);
    expect((await fspl('ref', ['queue-write', '-q', r], { stdin: two })).code).toBe(0);
    const ls = await fspl('ref', ['queue-ls', '-q', r]);
    expect(ls.code, ls.stderr).toBe(0);
    expect(listedSeqs(ls.stdout)).toEqual(['1', '2']);
    fs.writeFileSync(log, '');
    const refRun = await fspl('ref', ['queue-process', '-q', r, '--on-error', 'delete', script]);
    expect(refRun.code, refRun.stderr).toBe(0);
    // Job 1 (the moved one, which still fails: deleted), then job 2 (retries 7, sealed).
    expect(fs.readFileSync(log, 'utf8')).toBe('1 1 payload 2\n2 0 payload 2b\n');
    expect(fs.readdirSync(path.join(r, 'jobs'))).toEqual([]);
  });

  test('without the new options, our queue-process leaves the queue directory as the reference does', {
    timeout: 60_000,
  }, async () => {
    const dir = tmpDir();
    const { script } = recorder(dir);
    const dirs: Record<string, string[]> = {};
    for (const impl of ['ref', 'ours'] as const) {
      const q = path.join(dir, impl);
      expect((await fspl(impl, ['queue-init', '-q', q])).code).toBe(0);
      for (const fail of ['0', '1']) {
        const p = await fspl('ours', ['prepare', '-s', path.join(dir, `${impl}-seq`), '-i', '/dev/null'], {
          env: { FSPL_SET_FAIL: fail },
        });
        expect((await fspl(impl, ['queue-write', '-q', q], { stdin: p.stdout })).code).toBe(0);
      }
      const run = await fspl(impl, ['queue-process', '-q', q, script]);
      expect(run.code).toBe(1);
      dirs[impl] = fs.readdirSync(q).sort();
    }
    expect(dirs.ours).toEqual(dirs.ref);
  });
});
