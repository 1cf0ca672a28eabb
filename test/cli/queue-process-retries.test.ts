/**
 * queue-process --retries / --failed-to and queue-retry through the CLI: the one line a pass
 * that leaves a retry due ends with, usage errors, a failed-jobs queue listed with its facts,
 * and the jobs put back. The library's tests (test/process/retry.test.ts, test/queue/) check the
 * rest; these check that the command line reaches them.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import { Queue } from '../../src/queue/queue.js';
import { FSPL_BIN, memTempDir } from '../helpers.js';

function fspl(args: string[]) {
  const r = spawnSync(process.execPath, [FSPL_BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A queue of jobs 1..3 and a command failing job 2. */
function setup() {
  const dir = memTempDir();
  const q = Queue.init(path.join(dir, 'q'));
  for (let s = 1n; s <= 3n; s++)
    q.writeBuffer(encodeHeader(makeHeader({ seq: s, cmd: { kind: 'Command', params: [], env: [] } })));
  const cmd = path.join(dir, 'job.sh');
  fs.writeFileSync(cmd, '#!/bin/sh\ncat >/dev/null\n[ "$FSPL_SEQ" = 2 ] && exit 3\nexit 0\n', { mode: 0o755 });
  return { dir, q, cmd };
}

const errorLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('Error: '));

describe('queue-process --retries and --failed-to', () => {
  it('one pass leaving a retry due: exit 1, one line saying when the next try is due', () => {
    const { q, cmd } = setup();
    const r = fspl(['queue-process', '-q', q.dir, '--retries', '2', '--retry-delay', '60', cmd]);
    expect(r.code).toBe(1);
    expect(errorLines(r.stderr)).toEqual([
      expect.stringMatching(
        new RegExp(
          /^Error: Job 2 failed \(command exited with status 3\); try 2 of 3 is /.source +
            /due at \d{4}-\d\d-\d\dT[\d:.]+Z; stopping, the job stays in the queue$/.source,
        ),
      ),
    ]);
    expect(q.getNext()).toBe(2n);
    const again = fspl(['queue-process', '-q', q.dir, '--retries', '2', '--retry-delay', '60', cmd]);
    expect(errorLines(again.stderr)).toEqual([
      expect.stringMatching(/^Error: Job 2 waits for its next try; try 2 of 3 is due at /),
    ]);
  });

  it('usage errors: one line, no stack trace', () => {
    const { q, cmd } = setup();
    for (const [args, msg] of [
      [['--retry-delay', '5'], /--retry-delay and --retry-max-delay only apply with --retries/],
      [['--retries', 'x'], /invalid value 'x' for --retries/],
      [['--retries', '1', '--retry-delay', '-1'], /invalid value '-1' for --retry-delay/],
    ] as const) {
      const r = fspl(['queue-process', '-q', q.dir, ...args, cmd]);
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(msg);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    fs.writeFileSync(path.join(q.dir, 'file'), '');
    const notQueue = fspl(['queue-process', '-q', q.dir, '--failed-to', path.join(q.dir, 'file'), cmd]);
    expect(errorLines(notQueue.stderr)).toEqual([expect.stringMatching(/is not a queue/)]);
    const itself = fspl(['queue-process', '-q', q.dir, '--failed-to', q.dir, cmd]);
    expect(errorLines(itself.stderr)).toEqual([expect.stringMatching(/itself/)]);
  });

  it('--failed-to: the queue goes on; queue-ls shows the facts; queue-retry puts the job back', () => {
    const { dir, q, cmd } = setup();
    const F = path.join(dir, 'F');
    const r = fspl(['queue-process', '-q', q.dir, '--retries', '1', '--retry-delay', '0', '--failed-to', F, cmd]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/Job 2 failed \(command exited with status 3\) after 2 tries: moved to ".*F" as job 1/);
    expect(q.getNext()).toBe(4n);
    const ls = fspl(['queue-ls', '-q', F]);
    expect(ls.stdout.split('\n')[0]).toMatch(/^ID +creation timestamp +filename +failure$/);
    expect(ls.stdout.split('\n')[1]).toMatch(
      new RegExp(`^1 .* job 2 of ${q.dir}, 2 tries, command exited with status 3, at \\S+Z$`),
    );
    const json = JSON.parse(fspl(['queue-ls', '-q', F, '--json']).stdout);
    expect(json.failure).toMatchObject({ seq: '2', attempts: 2, outcome: 'failure' });
    // The plain queue's listing is as the reference's: no new column.
    expect(fspl(['queue-ls', '-q', q.dir]).stdout).toBe('ID                   creation timestamp          filename\n');
    const back = fspl(['queue-retry', '-q', F, '--to', q.dir]);
    expect(back.code, back.stderr).toBe(0);
    expect(
      (fspl(['queue-ls', '-q', q.dir, '--json']).stdout.trim().split('\n') as string[]).map((l) => JSON.parse(l).seq),
    ).toEqual(['4']);
    expect(fspl(['queue-retry', '-q', F]).stderr).toMatch(/--to/);
  });
});
