/**
 * A job chained to the one before it (src/sys/exec-chain.ts, native/fspl_native.c "chain"): at
 * the running child's exit with status 0 the addon runs the record's batch, then starts the next
 * child; any other exit, a failed record or a disarmed link starts nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunResult, runCommand } from '../../src/sys/exec.js';
import { ChainLink } from '../../src/sys/exec-chain.js';
import { nativeBatch } from '../../src/sys/fs-batch.js';
import { loadNative } from '../../src/sys/native.js';
import type { SpawnIo } from '../../src/sys/native-spawn.js';
import { tempDir } from '../helpers.js';

const PATH = process.env.PATH ?? '/usr/bin:/bin';

/** Whether the addon is built with chains, whatever FSPL_NO_NATIVE says in our environment. */
function haveChain(): boolean {
  const saved = process.env.FSPL_NO_NATIVE;
  delete process.env.FSPL_NO_NATIVE;
  try {
    return loadNative()?.chain !== undefined;
  } finally {
    if (saved !== undefined) process.env.FSPL_NO_NATIVE = saved;
  }
}

describe.skipIf(!haveChain())('a chained start (ChainLink)', () => {
  let saved: string | undefined;
  let dir: string;
  beforeEach(() => {
    saved = process.env.FSPL_NO_NATIVE;
    delete process.env.FSPL_NO_NATIVE;
    dir = tempDir();
  });
  afterEach(() => {
    if (saved !== undefined) process.env.FSPL_NO_NATIVE = saved;
  });

  /** A shell command run through runCommand, told to `link`. */
  const run = (script: string, link: ChainLink): Promise<RunResult> =>
    runCommand({ command: 'sh', args: ['-c', script], env: { PATH }, stdin: 'ignore', output: 'inherit', link });

  /** A next child that writes `text` to `file` (then exits 0). */
  const writer = (file: string, text: string): SpawnIo => ({
    command: 'sh',
    args: ['-c', `printf %s '${text}' > '${file}'`],
    env: { PATH },
    stdin: -1,
    stdout: 1,
    stderr: 2,
  });

  /** The next job's file (made here): its name and inode, as the chain checks them before the start. */
  const jobFile = (name = 'job') => {
    const p = path.join(dir, name);
    if (!fs.existsSync(p)) fs.writeFileSync(p, 'job');
    return { path: p, ino: fs.statSync(p).ino };
  };

  /** A record that creates `file` durably (writeFile) and fsyncs its directory. */
  const record = (file: string) =>
    nativeBatch([
      {
        op: 'writeFile',
        path: file,
        flags: fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL,
        mode: 0o644,
        data: Buffer.from('done\n'),
        must: true,
      },
      { op: 'fsyncDir', path: path.dirname(file), must: true },
    ])!;

  /**
   * `sleep 0.1` run with its link armed: at its exit, record(done), then `next` (a writer of
   * `never` unless given) started while `file` holds the job opened.
   */
  const armedSleep = (done: string, next = writer(path.join(dir, 'never'), 'x'), file = jobFile()) => {
    const link = new ChainLink();
    const running = run('sleep 0.1', link);
    expect(link.arm(record(done).encoded, next, file)).toBe(true);
    return { link, running };
  };

  it('at an exit with status 0: the record, then the next child, which is waited for', async () => {
    const link = new ChainLink();
    const done = path.join(dir, 'record');
    const out = path.join(dir, 'next');
    const running = run('sleep 0.2', link);
    const batch = record(done);
    expect(link.armable).toBe(true);
    // The next child checks that the record was made before it started.
    const next = writer(out, 'x');
    next.args = ['-c', `test -f '${done}' && printf ok > '${out}'`];
    expect(link.arm(batch.encoded, next, jobFile())).toBe(true);
    expect(link.armable).toBe(false); // one arming
    const r = await running;
    expect(r.ok).toBe(true);
    const fired = link.fired!;
    expect(Array.from(batch.results(fired.results))).toEqual([0, 0]);
    expect(fired.next?.pid).toBeGreaterThan(0);
    expect(await fired.next!.exited).toEqual({ code: 0, signal: null });
    expect(fs.readFileSync(out, 'utf8')).toBe('ok');
    expect(fs.readFileSync(done, 'utf8')).toBe('done\n');
  });

  it('the next child can be chained in turn, through runCommand adopting it', async () => {
    const first = new ChainLink();
    const running = run('sleep 0.1', first);
    // The next child runs a while: the second arming comes while it runs.
    const slow = { ...writer(path.join(dir, 'n1'), 'a'), args: ['-c', `sleep 0.3; printf a > '${dir}/n1'`] };
    expect(first.arm(record(path.join(dir, 'r1')).encoded, slow, jobFile())).toBe(true);
    await running;
    const second = new ChainLink();
    const adopted = runCommand({
      command: 'sh',
      args: [],
      env: { PATH },
      stdin: 'ignore',
      output: 'inherit',
      link: second,
      adopt: first.fired!.next,
    });
    expect(second.arm(record(path.join(dir, 'r2')).encoded, writer(path.join(dir, 'n2'), 'b'), jobFile())).toBe(true);
    expect((await adopted).ok).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'n1'), 'utf8')).toBe('a');
    expect(fs.readFileSync(path.join(dir, 'r2'), 'utf8')).toBe('done\n');
    expect(await second.fired!.next!.exited).toEqual({ code: 0, signal: null });
    expect(fs.readFileSync(path.join(dir, 'n2'), 'utf8')).toBe('b');
  });

  it('an exit with another status, or by a signal, runs nothing', async () => {
    for (const script of ['sleep 0.1; exit 3', 'sleep 0.1; kill -TERM $$']) {
      const link = new ChainLink();
      const running = run(script, link);
      const done = path.join(dir, `record-${script.length}`);
      expect(link.arm(record(done).encoded, writer(path.join(dir, 'never'), 'x'), jobFile())).toBe(true);
      expect((await running).ok).toBe(false);
      expect(link.fired).toBeUndefined();
      expect(fs.existsSync(done)).toBe(false);
    }
    expect(fs.existsSync(path.join(dir, 'never'))).toBe(false);
  });

  it('a record that fails starts nothing, and says why', async () => {
    const link = new ChainLink();
    const running = run('sleep 0.1', link);
    const batch = nativeBatch([{ op: 'unlink', path: path.join(dir, 'missing'), must: true }])!;
    expect(link.arm(batch.encoded, writer(path.join(dir, 'never'), 'x'), jobFile())).toBe(true);
    expect((await running).ok).toBe(true);
    expect(Array.from(batch.results(link.fired!.results))).toEqual([-2]); // ENOENT
    expect(link.fired!.next).toBeUndefined();
    await new Promise((r) => setTimeout(r, 100));
    expect(fs.existsSync(path.join(dir, 'never'))).toBe(false);
  });

  it('a next child that cannot start: the record stands, nothing started (its turn says why)', async () => {
    const done = path.join(dir, 'record');
    const { link, running } = armedSleep(done, { ...writer(done, 'x'), command: 'no-such-command-here' });
    await running;
    expect(link.fired!.next).toBeUndefined();
    expect(fs.readFileSync(done, 'utf8')).toBe('done\n');
  });

  it("the next job's file removed, replaced or linked since it was opened: the record stands, nothing started", async () => {
    for (const change of ['replace', 'remove', 'link'] as const) {
      const done = path.join(dir, `record-${change}`);
      const file = jobFile(`job-${change}`);
      const { link, running } = armedSleep(done, undefined, file);
      // A replacement made while the file is still there: another inode, surely.
      if (change === 'replace') fs.writeFileSync(`${file.path}.new`, 'another job');
      // A link to the very file opened: still not the file at the name, and never followed.
      if (change === 'link') fs.renameSync(file.path, `${file.path}.moved`);
      if (change === 'link') fs.symlinkSync(`${file.path}.moved`, file.path);
      if (change === 'replace') fs.renameSync(`${file.path}.new`, file.path);
      if (change === 'remove') fs.rmSync(file.path);
      expect((await running).ok).toBe(true);
      expect(link.fired!.next).toBeUndefined();
      expect(fs.readFileSync(done, 'utf8')).toBe('done\n');
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(fs.existsSync(path.join(dir, 'never'))).toBe(false);
  });

  it('disarmed: the exit is left to JavaScript', async () => {
    const done = path.join(dir, 'record');
    const { link, running } = armedSleep(done);
    link.disarm();
    expect((await running).ok).toBe(true);
    expect(link.fired).toBeUndefined();
    expect(fs.existsSync(done)).toBe(false);
    expect(link.arm(record(done).encoded, writer(path.join(dir, 'never'), 'x'), jobFile())).toBe(false); // exited
  });

  it('a link whose child never started (or child_process ran it) cannot be armed', () => {
    const link = new ChainLink();
    expect(link.armable).toBe(false);
    expect(link.arm([], writer(path.join(dir, 'never'), 'x'), jobFile())).toBe(false);
  });
});
