/**
 * queue-process --watch through the CLI: jobs written after start run in order, on the event
 * path and the polling path; a job that arrives early waits for its predecessor; SIGTERM
 * finishes the current job, releases the lock and exits 0, losing and repeating nothing.
 * No timing assertions: the figures (latency from rename to start) are printed, not judged;
 * bench/ measures them.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import { Queue } from '../../src/queue/queue.js';
import { FSPL_BIN, tempDir } from '../helpers.js';

const RECORD =
  'echo "start $FSPL_SEQ $(date +%s%N)" >> "$LOG"; if [ "$FSPL_SEQ" ' +
  '= "$SLOW" ]; then sleep 1; fi; echo "end $FSPL_SEQ" >> "$LOG"';

function setup() {
  const dir = tempDir();
  const qdir = path.join(dir, 'q');
  const q = Queue.init(qdir);
  const log = path.join(dir, 'log');
  fs.writeFileSync(log, '');
  return { dir, qdir, q, log };
}

function put(q: Queue, seq: bigint): number {
  q.writeBuffer(encodeHeader(makeHeader({ seq, cmd: { kind: 'Command', params: [], env: [] } })));
  return Date.now();
}

function startWatcher(
  qdir: string,
  log: string,
  extra: string[] = [],
  slow = '',
): ChildProcess & { stderrText: () => string } {
  const child = spawn(
    process.execPath,
    [FSPL_BIN, 'queue-process', '-q', qdir, '--watch', ...extra, 'sh', '--', '-c', RECORD],
    {
      env: { ...process.env, LOG: log, SLOW: slow },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return Object.assign(child, { stderrText: () => err });
}

function lines(log: string): string[] {
  return fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
}

async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Wait until the watcher holds the queue lock: it has started and scanned. */
async function started(qdir: string, child: ChildProcess & { stderrText?: () => string }): Promise<void> {
  await until('the watcher to take the lock', () => {
    if (child.exitCode !== null) throw new Error(`the watcher exited with ${child.exitCode}: ${child.stderrText?.()}`);
    return spawnSync('flock', ['-n', path.join(qdir, 'nextseq.lock'), 'true']).status === 1;
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

for (const mode of [
  { name: 'file system events', args: [] as string[] },
  { name: 'polling', args: ['--poll-interval', '0.1'] },
]) {
  describe(`queue-process --watch (${mode.name})`, () => {
    it('runs jobs written after start, in order, and a job arriving early waits for its predecessor', async () => {
      const { qdir, q, log } = setup();
      const child = startWatcher(qdir, log, mode.args);
      try {
        await started(qdir, child);
        const written = new Map<string, number>();
        written.set('1', put(q, 1n));
        await until('job 1', () => lines(log).includes('end 1'));
        // 3 arrives before 2: it must wait.
        written.set('3', put(q, 3n));
        await new Promise((r) => setTimeout(r, 300));
        expect(lines(log).filter((l) => l.startsWith('start'))).toHaveLength(1);
        written.set('2', put(q, 2n));
        await until('jobs 2 and 3', () => lines(log).includes('end 3'));
        child.kill('SIGTERM');
        expect(await exited(child)).toBe(0);
        const starts = lines(log).filter((l) => l.startsWith('start'));
        expect(starts.map((l) => l.split(' ')[1])).toEqual(['1', '2', '3']);
        const latency = starts.map((l) => {
          const [, seq, ns] = l.split(' ');
          return Math.round(Number(BigInt(ns!) / 1_000_000n) - written.get(seq!)!);
        });
        console.log(
          `watch (${mode.name}): rename-to-start latency, ms: ${latency.join(', ')} (job 3 waited for 2 by design)`,
        );
        expect(fs.readdirSync(q.jobsDir)).toEqual([]);
        expect(q.getNext()).toBe(4n);
      } finally {
        child.kill('SIGKILL');
      }
    });
  });
}

describe('queue-process --watch: stopping', () => {
  it('SIGTERM mid-job finishes that job, releases the lock, exits 0; nothing lost or repeated', async () => {
    const { qdir, q, log } = setup();
    for (const s of [1n, 2n, 3n]) put(q, s);
    const child = startWatcher(qdir, log, [], '2');
    try {
      await until('job 2 to start', () => lines(log).some((l) => l.startsWith('start 2')));
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
      expect(lines(log).map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual([
        'start 1',
        'end 1',
        'start 2',
        'end 2',
      ]);
      expect(q.getNext()).toBe(3n);
      // The lock is free again: a batch run takes over and runs job 3 only.
      const r = spawnSync(process.execPath, [FSPL_BIN, 'queue-process', '-q', qdir, 'sh', '--', '-c', RECORD], {
        env: { ...process.env, LOG: log },
      });
      expect(r.status).toBe(0);
      expect(
        lines(log)
          .filter((l) => l.startsWith('start'))
          .map((l) => l.split(' ')[1]),
      ).toEqual(['1', '2', '3']);
      expect(fs.readdirSync(q.jobsDir)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('SIGINT while idle exits 0 at once; a failing job under Retry ends the watch with status 1', async () => {
    const { qdir, q, log } = setup();
    const idle = startWatcher(qdir, log);
    await started(qdir, idle);
    idle.kill('SIGINT');
    expect(await exited(idle)).toBe(0);

    const failing = spawn(process.execPath, [FSPL_BIN, 'queue-process', '-q', qdir, '--watch', 'false'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    failing.stderr!.on('data', (d) => (err += d));
    try {
      await started(qdir, Object.assign(failing, { stderrText: () => err }));
      put(q, 1n);
      expect(await exited(failing)).toBe(1);
      expect(err).toMatch(/^Error: Job 1 failed \(command exited with status 1\)/m);
      expect(q.getNext()).toBe(1n);
    } finally {
      failing.kill('SIGKILL');
    }
  });

  it('rejects --poll-interval without --watch, and bad intervals, as usage errors', () => {
    const { qdir } = setup();
    for (const args of [
      ['--poll-interval', '1'],
      ['--watch', '--poll-interval', 'soon'],
      ['--watch', '--poll-interval', '0'],
    ]) {
      const r = spawnSync(process.execPath, [FSPL_BIN, 'queue-process', '-q', qdir, ...args, 'true'], {
        encoding: 'utf8',
      });
      expect([args.join(' '), r.status]).toEqual([args.join(' '), 2]);
      expect(r.stderr).toMatch(/^error: .*poll-interval/);
    }
  });
});
