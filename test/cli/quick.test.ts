/**
 * `fspl queue-process -q DIR COMMAND` answered before the CLI loads (src/cli/quick.ts, bin/fspl):
 * the shapes it takes, and the same status and output as the CLI's own run over queues in every
 * state (the CLI's run is asked for with `--queuedir=DIR`, a shape the quick run leaves alone).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { plainQueueProcessDir } from '../../src/cli/quick.js';
import { encodeHeader, Queue } from '../../src/lowlevel.js';
import { loadNative } from '../../src/sys/native.js';
import { FSPL_BIN, holdElsewhere, tempDir } from '../helpers.js';

const native = loadNative()?.flock !== undefined;
if (!native) console.warn('!!! quick.test.ts: the native addon is not built: the quick run always declines !!!');

/** bin/fspl's quick(argv), as the command runs it (dist/bundle/quick.cjs). */
const { quick } = createRequire(import.meta.url)(FSPL_BIN) as { quick(argv: string[]): boolean };

function fspl(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [FSPL_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function queue(): string {
  const dir = path.join(tempDir(), 'q');
  Queue.init(dir);
  return dir;
}

describe('plainQueueProcessDir', () => {
  it('takes queue-process -q DIR COMMAND [ARGS], ARGS free of options up to a --', () => {
    expect(plainQueueProcessDir(['queue-process', '-q', 'D', 'true'])).toBe('D');
    expect(plainQueueProcessDir(['queue-process', '--queuedir', 'D', 'cat', 'x'])).toBe('D');
    expect(plainQueueProcessDir(['queue-process', '-q', 'D', 'sh', '--', '-c', 'cat >> F'])).toBe('D');
  });

  it('leaves every other shape to the CLI', () => {
    for (const argv of [
      ['queue-process', '-q', 'D'],
      ['queue-process', '--queuedir=D', 'true'],
      ['queue-process', '-q', 'D', '--watch', 'true'],
      ['queue-process', '-q', 'D', 'true', '--watch'],
      ['queue-process', '-q', 'D', 'true', 'x', '-n', '1'],
      ['queue-process', '-q', 'D', '--', 'true'],
      ['queue-process', '-q', '-D', 'true'],
      ['queue-process', '-q', '', 'true'],
      ['queue-process', '--queues-in', 'D', 'true'],
      ['-l', 'debug', 'queue-process', '-q', 'D', 'true'],
      ['queue-ls', '-q', 'D', 'true'],
      [],
    ])
      expect(plainQueueProcessDir(argv), argv.join(' ')).toBeUndefined();
  });
});

describe('the quick run against the CLI run', () => {
  it.runIf(native)('answers an empty queue itself: status 0, nothing printed', () => {
    const dir = queue();
    expect(quick(['queue-process', '-q', dir, 'true'])).toBe(true);
    expect(fspl(['queue-process', '-q', dir, 'true'])).toEqual({ status: 0, stdout: '', stderr: '' });
  });

  it('declines what is not plainly empty, and a file that is not a queue', () => {
    const dir = queue();
    fs.writeFileSync(path.join(dir, 'nextseq'), 'x\n');
    expect(quick(['queue-process', '-q', dir, 'true'])).toBe(false);
    expect(quick(['queue-process', '-q', path.join(dir, 'nothing'), 'true'])).toBe(false);
    expect(quick(['queue-process', '--queuedir', dir, 'true', '--watch'])).toBe(false);
  });

  /** Each state of a queue, made fresh for each of the two runs. */
  const states: Record<string, (dir: string) => void> = {
    empty: () => {},
    'one job': (dir) =>
      Queue.open(dir).writeBuffer(
        encodeHeader({ seq: 1n, ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } }),
      ),
    'nextseq not a number': (dir) => fs.writeFileSync(path.join(dir, 'nextseq'), 'twelve\n'),
    'no nextseq': (dir) => fs.rmSync(path.join(dir, 'nextseq')),
    'no lock file': (dir) => fs.rmSync(path.join(dir, 'nextseq.lock')),
    'no jobs/': (dir) => fs.rmSync(path.join(dir, 'jobs'), { recursive: true }),
    'a note for a job that is gone': (dir) =>
      fs.writeFileSync(path.join(dir, 'nextseq.lock'), `S 1 fspl-00000000-0000-0000-0000-000000000000.fspl\n`),
  };

  for (const [state, make] of Object.entries(states)) {
    it(`the same status, output and queue afterwards: ${state}`, () => {
      const runs = ['-q', '--queuedir='].map((how) => {
        const dir = queue();
        make(dir);
        const where = how === '-q' ? ['-q', dir] : [`--queuedir=${dir}`];
        const r = fspl(['queue-process', ...where, 'sh', '--', '-c', 'cat > /dev/null; echo ran']);
        const files = fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
        const seq = fs.existsSync(path.join(dir, 'nextseq')) ? fs.readFileSync(path.join(dir, 'nextseq'), 'utf8') : '';
        return { ...r, stderr: r.stderr.replaceAll(dir, 'DIR'), files, seq };
      });
      expect(runs[0]).toEqual(runs[1]);
    });
  }

  it('a lock held elsewhere: the same error after the same wait', async () => {
    const dir = queue();
    const holder = await holdElsewhere(path.join(dir, 'nextseq.lock'), 10);
    try {
      const quickRun = fspl(['queue-process', '-q', dir, 'true']);
      const cliRun = fspl(['queue-process', `--queuedir=${dir}`, 'true']);
      expect(quickRun.status).toBe(1);
      expect(quickRun).toEqual(cliRun);
      expect(quickRun.stderr).toContain('held by another process');
    } finally {
      holder.kill('SIGKILL');
    }
  });
});
