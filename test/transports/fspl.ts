/**
 * Helpers for the transport tests: an `fspl` of either implementation on a PATH of its own (as a
 * remote command or an NNCP exec handle finds it), and the few queue commands they use.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { FSPL_BIN, tempDir } from '../helpers.js';

export const REF_BIN = process.env.FSPL_REFERENCE_BIN || '/usr/bin/fspl';
export type Impl = 'ours' | 'ref';

/** A directory holding `fspl` (a wrapper that runs IMPL), and a PATH that starts with it. */
export function fsplPath(impl: Impl): { bin: string; fspl: string; PATH: string } {
  const bin = tempDir('fspl-bin-');
  const target = impl === 'ours' ? `"${process.execPath}" "${FSPL_BIN}"` : `"${REF_BIN}"`;
  const fspl = path.join(bin, 'fspl');
  fs.writeFileSync(fspl, `#!/bin/sh\nexec ${target} "$@"\n`, { mode: 0o755 });
  return { bin, fspl, PATH: `${bin}:/usr/local/bin:/usr/bin:/bin` };
}

/** Run `fspl ARGS` of IMPL; returns status, stdout and stderr as text. */
export function fspl(impl: Impl, args: string[], opts: { input?: Buffer | string; cwd?: string } = {}) {
  const [cmd, pre] = impl === 'ours' ? [process.execPath, [FSPL_BIN]] : [REF_BIN, []];
  const r = spawnSync(cmd, [...pre, ...args], {
    input: opts.input,
    cwd: opts.cwd,
    env: { ...process.env, PATH: `/usr/bin:/bin` },
  });
  return { status: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString(), raw: r.stdout };
}

/** A packet made by IMPL's `fspl prepare -s SEQFILE -i -` with PAYLOAD (and `--seal` for ours if asked). */
export function prepare(impl: Impl, seqfile: string, payload: string | Buffer, opts: { seal?: boolean } = {}): Buffer {
  const r = fspl(impl, ['prepare', ...(opts.seal ? ['--seal'] : []), '-s', seqfile, '-i', '-'], { input: payload });
  expect(r.status, r.stderr).toBe(0);
  return r.raw;
}

/**
 * Process QUEUE once with IMPL's queue-process, each job appending "SEQ PAYLOAD" to a log;
 * returns the log's lines (the jobs run, in the order they ran) and the exit status.
 */
export function processQueue(impl: Impl, queue: string): { ran: string[]; status: number | null; stderr: string } {
  const log = path.join(queue, '..', `ran-${path.basename(queue)}.log`);
  const r = fspl(impl, [
    'queue-process',
    '-q',
    queue,
    'sh',
    '--',
    '-c',
    `printf '%s %s\\n' "$FSPL_SEQ" "$(cat)" >> '${log}'`,
  ]);
  const ran = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : [];
  fs.rmSync(log, { force: true });
  return { ran, status: r.status, stderr: r.stderr };
}

/** The job files (fspl-*.fspl) in QUEUE/jobs. */
export function jobFiles(queue: string): string[] {
  return fs.readdirSync(path.join(queue, 'jobs')).filter((f) => /^fspl-.*\.fspl$/.test(f));
}
