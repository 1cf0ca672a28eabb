/**
 * prepare --not-before through the CLI: TIME as RFC 3339 or +DURATION (a bad one a usage error
 * that uses no number), a one pass stopping at the job not due yet with one line saying when it
 * is, --watch running it once due while its process uses next to no CPU, --order-by Timestamp,
 * and queue-status saying "waiting until". The library's tests (test/process/due.test.ts) check
 * the rest.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FSPL_BIN, memTempDir } from '../helpers.js';

function fspl(args: string[], input?: Buffer) {
  const r = spawnSync(process.execPath, [FSPL_BIN, ...args], { input, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}

/** A queue of three jobs, the second prepared with `--not-before notBefore`; a command logging `SEQ MS`. */
function setup(notBefore: string, prepareArgs: (i: number) => string[] = () => []) {
  const dir = memTempDir();
  const q = path.join(dir, 'q');
  expect(fspl(['queue-init', '-q', q]).code).toBe(0);
  const seq = path.join(dir, 'seq');
  for (const i of [1, 2, 3]) {
    const p = fspl(['prepare', '-s', seq, ...(i === 2 ? ['--not-before', notBefore] : []), ...prepareArgs(i)]);
    expect(p.code, p.stderr).toBe(0);
    expect(fspl(['queue-write', '-q', q], p.stdout).code).toBe(0);
  }
  const log = path.join(dir, 'log');
  const cmd = path.join(dir, 'job.sh');
  fs.writeFileSync(cmd, `#!/bin/sh\necho "$FSPL_SEQ $(date +%s%3N)" >> ${log}\n`, { mode: 0o755 });
  const runs = () =>
    (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []).map(
      (l) => l.split(' ').map(Number) as [number, number],
    );
  return { dir, q, seq, cmd, runs };
}

/** A process's CPU time so far (user and system), in seconds, from /proc/PID/stat. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 a second)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('prepare --not-before', () => {
  it('a bad TIME: a one-line usage error (status 2), no number taken', () => {
    const dir = memTempDir();
    const seq = path.join(dir, 'seq');
    for (const bad of ['tomorrow', '+5', '2026-12-01T08:00:00', '+1.5h', '']) {
      const r = fspl(['prepare', '-s', seq, '--not-before', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr.split('\n')[0]).toBe(
        `error: invalid value '${bad}' for --not-before: expected an RFC 3339 time with its offset ` +
          `(2026-12-01T08:00:00Z) or +DURATION (+90s, +15m, +2h, +1d, +1h30m), from 1970 to the year 275760`,
      );
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect(fs.existsSync(seq)).toBe(false);
  });

  it('queue-info and queue-ls --json show the time; an RFC 3339 time with an offset is kept in UTC', () => {
    const { q } = setup('2099-01-01T09:30:00+01:00');
    const ls = fspl(['queue-ls', '-q', q, '--json'])
      .stdout.toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(ls.map((j) => j.not_before)).toEqual([undefined, '2099-01-01T08:30:00.000Z', undefined]);
  });

  it('one pass: job 1 runs, then it stops at job 2 (exit 0) saying when it is due; job 3 waits', () => {
    const { q, cmd, runs } = setup('+1h');
    const r = fspl(['queue-process', '-q', q, cmd]);
    expect(r.code, r.stderr).toBe(0);
    expect(runs().map(([s]) => s)).toEqual([1]);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `Job 2 of ${JSON.stringify(q)} is not due before ` +
            `\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z; stopping, the job stays in the queue$`,
        ),
      ),
    ]);
    expect(fs.readFileSync(path.join(q, 'nextseq'), 'utf8').trim()).toBe('2');
    // queue-status: waiting until then (exit 0: it will go on by itself).
    const st = fspl(['queue-status', '-q', q]);
    expect(st.code).toBe(0);
    expect(st.stdout.toString()).toMatch(
      /^state: +waiting until \S+Z \(in (59m \d+s|1h 0m)\): job 2 is not due before then$/m,
    );
    const json = JSON.parse(fspl(['queue-status', '-q', q, '--json']).stdout.toString());
    expect(json).toMatchObject({ state: 'waiting', can_progress: true, runnable: 0, not_before: { seq: '2' } });
  });

  it('--order-by Timestamp: the job whose turn it is waits, and the jobs after it', () => {
    const { q, cmd, runs } = setup('+1h');
    const r = fspl(['queue-process', '-q', q, '--order-by', 'Timestamp', cmd]);
    expect(r.code, r.stderr).toBe(0);
    expect(runs().map(([s]) => s)).toEqual([1]);
    expect(r.stderr).toMatch(/Job 2 .* is not due before /);
  });

  it('--watch: job 2 runs once due (2 s), then job 3; waiting, the process uses next to no CPU', async () => {
    const { q, cmd, runs } = setup('+2s');
    const due = Date.parse(
      JSON.parse(fspl(['queue-ls', '-q', q, '--json']).stdout.toString().split('\n')[1]!).not_before,
    );
    const child = spawn(process.execPath, [FSPL_BIN, 'queue-process', '-q', q, '--watch', cmd], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    try {
      let atWait: number | undefined;
      let cpuWait: number | undefined;
      for (let i = 0; i < 500; i++) {
        const n = runs().length;
        if (n === 1 && atWait === undefined && stderr.includes('not due before')) atWait = cpuSeconds(child.pid!);
        if (n >= 2 && cpuWait === undefined && atWait !== undefined) cpuWait = cpuSeconds(child.pid!) - atWait;
        if (n >= 3) break;
        await sleep(20);
      }
      const r = runs();
      expect(r.map(([s]) => s)).toEqual([1, 2, 3]);
      expect(r[1]![1], 'job 2 not before its time').toBeGreaterThanOrEqual(due);
      expect(r[2]![1]).toBeGreaterThanOrEqual(r[1]![1]);
      expect(stderr).toMatch(/Job 2 of .* is not due before \S+Z; the queue waits until then/);
      // Over the wait (about 2 s, running job 2 included): a timer, not polling.
      expect(atWait, stderr).toBeDefined();
      expect(cpuWait).toBeLessThan(0.3);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
