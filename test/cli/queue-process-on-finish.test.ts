/**
 * queue-process --on-finish / --on-finish-timeout through the CLI: the usage errors, one line
 * each, and a real run whose hook writes a file. The library's tests (test/process/on-finish.test.ts)
 * check each outcome and that a hook never changes a record; these check that the command line
 * reaches them.
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

describe('queue-process --on-finish', () => {
  it('usage errors: one line, no stack trace, nothing run', () => {
    const { q, cmd } = setup();
    for (const [args, msg] of [
      [['--on-finish-timeout', '5'], /--on-finish-timeout only applies with --on-finish/],
      [['--on-finish', 'true', '--on-finish-timeout', 'x'], /invalid value 'x' for --on-finish-timeout/],
      [['--on-finish', ' '], /invalid value '' for --on-finish: expected a command line/],
    ] as const) {
      const r = fspl(['queue-process', '-q', q.dir, ...args, cmd]);
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(msg);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect(q.getNext()).toBe(1n);
  });

  it('runs the hook after each job with its outcome; a failing hook is logged and changes nothing', () => {
    const { dir, q, cmd } = setup();
    const out = path.join(dir, 'hook.log');
    const hook =
      `echo "$FSPL_SEQ $FSPL_JOB_OUTCOME $FSPL_JOB_EXIT_STATUS ` +
      `$FSPL_JOB_ATTEMPT" >> '${out}'; [ "$FSPL_SEQ" != 3 ]`;
    const r = fspl([
      'queue-process',
      '-q',
      q.dir,
      '--on-error',
      'Delete',
      '--on-finish',
      hook,
      '--on-finish-timeout',
      '10',
      cmd,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readFileSync(out, 'utf8')).toBe('1 success 0 1\n2 failure 3 1\n3 success 0 1\n');
    expect(r.stderr).toMatch(/Finish hook of job 3 exited with status 1/);
    expect(q.getNext()).toBe(4n);
    expect(fs.readdirSync(q.jobsDir)).toEqual([]);
  });
});
