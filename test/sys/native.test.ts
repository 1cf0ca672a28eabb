/**
 * The optional native addon (native/fspl_native.c, src/sys/native.ts) and the code paths that use it,
 * each checked against the pure-Node fallback (FSPL_NO_NATIVE=1): spawning job commands
 * (src/sys/exec.ts) and reading job headers for a scan (src/queue/queue.ts).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExecError } from '../../src/base/errors.js';
import { createLogger } from '../../src/base/log.js';
import { crc32, decodeHeader, encodeHeader, PREFIX_LENGTH } from '../../src/packet/codec.js';
import { nativeOpenHead, nativeReadHeads } from '../../src/packet/native-heads.js';
import type { PacketHeader } from '../../src/packet/types.js';
import { Queue } from '../../src/queue/queue.js';
import { type RunOptions, type RunResult, runCommand, runDetached } from '../../src/sys/exec.js';
import { loadNative } from '../../src/sys/native.js';
import { type DetachedStart, type NativeExit, nativeSpawn, nativeSpawnDetached } from '../../src/sys/native-spawn.js';
import { FSPL_BIN, ROOT, tempDir } from '../helpers.js';

/** Run fn with FSPL_NO_NATIVE set to `value` (undefined: unset), then restore it. */
function withNoNative<T>(value: string | undefined, fn: () => T): T {
  const saved = process.env.FSPL_NO_NATIVE;
  if (value === undefined) delete process.env.FSPL_NO_NATIVE;
  else process.env.FSPL_NO_NATIVE = value;
  try {
    return fn();
  } finally {
    if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
    else process.env.FSPL_NO_NATIVE = saved;
  }
}

/** The addon's file, for a process or worker of a test's own. */
const ADDON = path.join(ROOT, 'native', 'build', 'Release', 'fspl_native.node');

/** Whether the addon is built and loads (whatever FSPL_NO_NATIVE says in our environment). */
const HAVE_NATIVE = withNoNative(undefined, () => loadNative() !== undefined);

/** For the tests of the addon itself: FSPL_NO_NATIVE unset while they run. */
function nativeOnly(): void {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.FSPL_NO_NATIVE;
    delete process.env.FSPL_NO_NATIVE;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
    else process.env.FSPL_NO_NATIVE = saved;
  });
}

describe('the native addon', () => {
  it('is built and loads (on Linux, where npm run build builds it)', () => {
    // A failed native build only warns (fspl then uses its fallback); CI must notice it.
    if (process.platform === 'linux' && process.env.CI === 'true') expect(HAVE_NATIVE).toBe(true);
    if (!HAVE_NATIVE) console.warn('native addon not built: native tests compare the fallback with itself');
  });

  it('is not used when FSPL_NO_NATIVE is set', () => {
    withNoNative('1', () => {
      expect(loadNative()).toBeUndefined();
      expect(
        nativeSpawn({ command: 'true', args: [], env: {}, stdin: -1, stdout: 1, stderr: 2 }, () => {}),
      ).toBeUndefined();
      expect(nativeReadHeads('/', ['x'], 4096)).toBeUndefined();
    });
    for (const v of ['0', '', undefined]) withNoNative(v, () => expect(loadNative() !== undefined).toBe(HAVE_NATIVE));
  });
});

/** Run the tests of `fn` once with the addon (when built) and once with the fallback forced. */
function bothWays(fn: (mode: 'native' | 'fallback') => void): void {
  for (const mode of ['native', 'fallback'] as const) {
    describe.skipIf(mode === 'native' && !HAVE_NATIVE)(mode, () => {
      let saved: string | undefined;
      beforeEach(() => {
        saved = process.env.FSPL_NO_NATIVE;
        if (mode === 'fallback') process.env.FSPL_NO_NATIVE = '1';
        else delete process.env.FSPL_NO_NATIVE;
      });
      afterEach(() => {
        if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
        else process.env.FSPL_NO_NATIVE = saved;
      });
      fn(mode);
    });
  }
}

const PATH = process.env.PATH ?? '/usr/bin:/bin';
const BASE_ENV = { PATH, LC_ALL: 'C' };

/** Run a command with its output in a file; resolves to the result and the output. */
async function run(opts: Partial<RunOptions> & { command: string }): Promise<RunResult & { out: string }> {
  const dir = tempDir('fspl-native-');
  const outPath = path.join(dir, 'out');
  const out = fs.openSync(outPath, 'w');
  try {
    const r = await runCommand({ args: [], env: BASE_ENV, stdin: 'ignore', output: out, ...opts });
    return { ...r, out: fs.readFileSync(outPath, 'utf8') };
  } finally {
    fs.closeSync(out);
  }
}

/** Wait until a process is gone (a zombie that no reaper takes counts as gone). */
async function gone(pid: number): Promise<void> {
  const running = () => {
    try {
      return !/^\d+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };
  for (const end = Date.now() + 20_000; running(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > end) throw new Error(`process ${pid} is still running`);
  }
}

function failure(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: Error) => err,
  );
}

describe('running commands (src/sys/exec.ts)', () => {
  bothWays((mode) => {
    it('reports exit statuses', async () => {
      expect(await run({ command: 'true' })).toMatchObject({
        ok: true,
        code: 0,
        signal: null,
        timedOut: false,
        stdinClosedEarly: false,
      });
      expect(await run({ command: 'sh', args: ['-c', 'exit 3'] })).toMatchObject({ ok: false, code: 3, signal: null });
      expect(await run({ command: 'sh', args: ['-c', 'exit 255'] })).toMatchObject({
        ok: false,
        code: 255,
        signal: null,
      });
    });

    it('reports the signal that killed the command, by the names child_process uses', async () => {
      for (const sig of ['TERM', 'KILL', 'ABRT', 'IO', 'SYS', 'USR1', 'SEGV']) {
        expect(await run({ command: 'sh', args: ['-c', `kill -${sig} $$`] })).toMatchObject({
          ok: false,
          code: null,
          signal: `SIG${sig}`,
        });
      }
    });

    it('passes argv exactly, argv[0] being the command as given', async () => {
      const args = ['-c', 'printf "[%s]\\n" "$0" "$@"', 'zero', '', 'a b', 'é ✓', '-x', '*'];
      expect((await run({ command: 'sh', args })).out).toBe('[zero]\n[]\n[a b]\n[é ✓]\n[-x]\n[*]\n');
      expect((await run({ command: 'sh', args: ['-c', 'tr "\\0" "\\n" < /proc/$$/cmdline'] })).out).toBe(
        'sh\n-c\ntr "\\0" "\\n" < /proc/$$/cmdline\n',
      );
    });

    it('passes exactly the given environment, in its order', async () => {
      const env = { PATH, B_VAR: 'b', A_VAR: 'a=b=c', EMPTY: '', UNICODE: 'é ✓', LINES: 'x\ny' };
      const r = await run({ command: 'sh', args: ['-c', 'cat /proc/$$/environ'], env });
      // sh adds nothing to its own initial environment block.
      expect(r.out.split('\0').filter(Boolean)).toEqual(Object.entries(env).map(([k, v]) => `${k}=${v}`));
    });

    it('gives the command every signal at its default disposition and an empty mask (SIGPIPE included)', async () => {
      // grep reads its own status: the state it was started with. Signals 1-31 are all at their
      // defaults. (posix_spawn leaves glibc's two internal signals, 32 and 33, ignored, as in the
      // reference's children; libuv's fork leaves them at their defaults: the 0x180000000 bits.)
      const r = await run({ command: 'grep', args: ['-E', '^Sig(Ign|Blk)', '/proc/self/status'] });
      const [blk, ign] = r.out.split('\n').map((l) => BigInt(`0x${l.split('\t')[1] ?? '0'}`));
      expect(r.out).toMatch(/^SigBlk:\t0{16}\nSigIgn:\t[0-9a-f]{16}\n$/);
      expect([blk, ign! & ~0x180000000n]).toEqual([0n, 0n]);
      const p = await run({ command: 'sh', args: ['-c', 'yes | head -n 1'], timeout: 20 });
      expect(p).toMatchObject({ ok: true, timedOut: false, out: 'y\n' });
    });

    it('gives the command a descriptor as stdin, from its current offset', async () => {
      const dir = tempDir();
      const file = path.join(dir, 'payload');
      fs.writeFileSync(file, 'HEADERpayload bytes\n');
      const fd = fs.openSync(file, 'r');
      try {
        fs.readSync(fd, Buffer.alloc(6), 0, 6, null); // consume "HEADER"
        const r = await run({ command: 'cat', stdin: fd });
        expect(r).toMatchObject({ ok: true });
        expect(r.out).toBe('payload bytes\n');
      } finally {
        fs.closeSync(fd);
      }
    });

    it("'ignore' gives /dev/null as stdin; stdout and stderr both go to the output descriptor", async () => {
      const r = await run({
        command: 'sh',
        args: ['-c', 'readlink /proc/self/fd/0; cat; echo to-stderr >&2'],
        stdin: 'ignore',
      });
      expect(r.out).toBe('/dev/null\nto-stderr\n');
    });

    it("'inherit' passes our own stdin, stdout and stderr", () => {
      // In a child Node process, so that its stdin and stdout are pipes we control.
      const script =
        `
        const { runCommand } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'sys', 'exec.js'))});
        const r = await runCommand({ command: 'sh', args: ['-c', 'cat; echo err ` +
        `>&2'], env: { PATH: process.env.PATH }, stdin: 'inherit', output: 'inherit' });
        process.stdout.write('code ' + r.code + '\\n');`;
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        input: 'from our stdin\n',
        env: { ...process.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      }).toString();
      expect(out).toBe('from our stdin\ncode 0\n');
    });

    it('looks the command up in the PATH of the environment it is given', async () => {
      const dir = tempDir();
      const bin = path.join(dir, 'bin');
      fs.mkdirSync(bin);
      fs.writeFileSync(path.join(bin, 'fspl-test-cmd'), '#!/bin/sh\necho "found $0"\n', { mode: 0o755 });
      const found = await run({ command: 'fspl-test-cmd', env: { PATH: `/nonexistent:${bin}:/usr/bin:/bin` } });
      expect(found.out).toBe(`found ${bin}/fspl-test-cmd\n`);
      // Not in the child's PATH: not found, whatever our own PATH says.
      const saved = process.env.PATH;
      process.env.PATH = `${bin}:${saved}`;
      try {
        const err = await failure(run({ command: 'fspl-test-cmd', env: { PATH: '/usr/bin:/bin' } }));
        expect(err).toBeInstanceOf(ExecError);
        expect(err.message).toBe('Failed to run "fspl-test-cmd": No such file or directory');
      } finally {
        process.env.PATH = saved;
      }
    });

    it('finds a command moved within PATH at once, and one put earlier in PATH after a second at most', async () => {
      const dir = tempDir();
      const [a, b, c] = ['a', 'b', 'c'].map((d) => path.join(dir, d));
      for (const d of [a!, b!, c!]) fs.mkdirSync(d);
      const put = (d: string) =>
        fs.writeFileSync(path.join(d, 'fspl-path-probe'), `#!/bin/sh\necho ${path.basename(d)}\n`, { mode: 0o755 });
      const env = { PATH: `${a}:${b}:${c}:/usr/bin:/bin` };
      const probe = async (e = env) => (await run({ command: 'fspl-path-probe', env: e })).out.trim();
      put(b!);
      expect(await probe()).toBe('b');
      // Gone from where it was found: looked for again at once.
      fs.rmSync(path.join(b!, 'fspl-path-probe'));
      put(c!);
      expect(await probe()).toBe('c');
      // Under another PATH, its own search.
      put(a!);
      expect(await probe({ PATH: `${a}:/usr/bin:/bin` })).toBe('a');
      // Put earlier in the same PATH: found within a second (the addon keeps a name found that long).
      await new Promise((r) => setTimeout(r, 1100));
      expect(await probe()).toBe('a');
    });
    it('fails with ExecError when the command does not exist or is not executable', async () => {
      const dir = tempDir();
      const noexec = path.join(dir, 'noexec');
      fs.writeFileSync(noexec, '#!/bin/sh\necho hi\n', { mode: 0o644 });
      const cases: Array<[Partial<RunOptions> & { command: string }, string]> = [
        [{ command: 'fspl-no-such-command' }, 'Failed to run "fspl-no-such-command": No such file or directory'],
        [
          { command: path.join(dir, 'missing') },
          `Failed to run ${JSON.stringify(path.join(dir, 'missing'))}: No such file or directory`,
        ],
        [{ command: noexec }, `Failed to run ${JSON.stringify(noexec)}: Permission denied`],
        // In PATH, but not executable: EACCES, as execvp(3) reports it.
        [{ command: 'noexec', env: { PATH: `${dir}:/usr/bin` } }, 'Failed to run "noexec": Permission denied'],
        [{ command: dir }, `Failed to run ${JSON.stringify(dir)}: Permission denied`],
      ];
      for (const [opts, message] of cases) {
        const err = await failure(run(opts));
        expect(err, opts.command).toBeInstanceOf(ExecError);
        expect(err.message).toBe(message);
      }
    });

    it('runs an executable file without #! through /bin/sh, as execvp(3) does', async () => {
      const dir = tempDir();
      const script = path.join(dir, 'script');
      fs.writeFileSync(script, 'echo "no shebang $1"\n', { mode: 0o755 });
      expect((await run({ command: script, args: ['arg'] })).out).toBe('no shebang arg\n');
    });

    it('refuses NUL bytes in arguments and variables as child_process does', async () => {
      const a = await failure(run({ command: 'true', args: ['a\0b'] }));
      expect(a).toBeInstanceOf(ExecError);
      expect(a.message).toMatch(/^Failed to run "true": The argument 'args\[0\]' must be a string without null bytes/);
      const e = await failure(run({ command: 'true', env: { PATH, X: 'a\0b' } }));
      expect(e.message).toMatch(
        /^Failed to run "true": The property 'options\.env\['X'\]' must be a string without null bytes/,
      );
    });

    it('kills the command with SIGKILL after the timeout', async () => {
      const t0 = Date.now();
      const r = await run({ command: 'sleep', args: ['30'], timeout: 0.2 });
      expect(r).toMatchObject({ ok: false, code: null, signal: 'SIGKILL', timedOut: true });
      expect(Date.now() - t0).toBeLessThan(20_000);
      expect(await run({ command: 'true', timeout: 30 })).toMatchObject({ ok: true, timedOut: false });
    });

    it(
      'starts the command leading a process group of its own (signals to ' +
        'ours miss it); a session too on a terminal, or through child_process',
      async () => {
        const script = 'echo $$; cut -d" " -f5,6 /proc/$$/stat';
        const ours = fs.readFileSync('/proc/self/stat', 'latin1').split(') ')[1]!.split(' ');
        const [ourSession, ourTty] = [ours[3]!, ours[4]!];
        for (const stdin of ['ignore', Readable.from([Buffer.from('x')])] as const) {
          const r = await run({ command: 'sh', args: ['-c', `cat > /dev/null; ${script}`], stdin });
          const [pid, ids] = r.out.trim().split('\n');
          const [pgid, sid] = ids!.split(' ');
          expect(pgid).toBe(pid);
          // child_process (a piped payload, or no addon) can only give a session; the addon gives
          // one only when we have a controlling terminal (exec.ts says why).
          const viaChildProcess = typeof stdin === 'object' || mode === 'fallback';
          expect(sid).toBe(viaChildProcess || ourTty !== '0' ? pid : ourSession);
        }
      },
    );

    it('kills the whole process group at the timeout: what the command started goes too', async () => {
      const r = await run({ command: 'sh', args: ['-c', 'sleep 300 & echo $!; wait'], timeout: 0.2 });
      expect(r).toMatchObject({ ok: false, signal: 'SIGKILL', timedOut: true, stopped: false });
      await gone(Number(r.out.trim()));
    });

    it('stop: kills the whole group and says stopped, unless the command has succeeded by then', async () => {
      const dir = tempDir();
      const started = path.join(dir, 'started');
      const stop = new AbortController();
      const pending = run({
        command: 'sh',
        args: ['-c', `sleep 300 & echo $!; touch ${started}; wait`],
        stop: stop.signal,
      });
      while (!fs.existsSync(started)) await new Promise((r) => setTimeout(r, 10));
      stop.abort();
      const r = await pending;
      expect(r).toMatchObject({ ok: false, signal: 'SIGKILL', timedOut: false, stopped: true });
      await gone(Number(r.out.trim()));
      // Aborted before it starts: stopped at once. Aborted after it succeeded: a success.
      expect(await run({ command: 'sleep', args: ['300'], stop: AbortSignal.abort() })).toMatchObject({
        ok: false,
        stopped: true,
      });
      const late = new AbortController();
      const done = await run({ command: 'true', stop: late.signal });
      late.abort();
      expect(done).toMatchObject({ ok: true, stopped: false });
    });

    it('runs many commands at once (more than the thread pool has threads)', async () => {
      const rs = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          run({ command: 'sh', args: ['-c', `sleep 0.2; echo ${i}; exit ${i % 3}`] }),
        ),
      );
      rs.forEach((r, i) => expect(r).toMatchObject({ code: i % 3, out: `${i}\n` }));
    });

    it('coexists with child_process children (their SIGCHLD handling leaves ours alone)', async () => {
      const viaNode = new Promise<number | null>((resolve) =>
        spawn('sh', ['-c', 'sleep 0.3; exit 4']).on('close', resolve),
      );
      const ours = Promise.all([
        run({ command: 'sh', args: ['-c', 'sleep 0.1; exit 5'] }),
        run({ command: 'sh', args: ['-c', 'sleep 0.5; exit 6'] }),
      ]);
      expect(await viaNode).toBe(4);
      expect((await ours).map((r) => r.code)).toEqual([5, 6]);
    });
  });
});

describe.skipIf(!HAVE_NATIVE)('nativeSpawn', () => {
  nativeOnly();
  it('reaps the child before reporting its exit', async () => {
    let pid = 0;
    const exit = await new Promise((resolve) => {
      const r = nativeSpawn(
        { command: 'sh', args: ['-c', 'exit 7'], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 },
        resolve,
      );
      expect(r && 'pid' in r).toBe(true);
      pid = (r as { pid: number }).pid;
    });
    expect(exit).toEqual({ code: 7, signal: null });
    expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
  });

  it("tells each exit once when the next child starts from the last one's exit, side by side with forks", async () => {
    // A child started from an exit's callback may still hold a copy of the ended child's pidfd
    // for a moment (exec lets us go before it closes its close-on-exec descriptors; so does a
    // fork of child_process for longer): the ended one must leave the addon's epoll set all the same.
    const told = new Map<number, number>();
    const forks = Array.from({ length: 4 }, () => spawn('sh', ['-c', 'sleep 0.2'], { stdio: 'ignore' }));
    await new Promise<void>((done) => {
      let left = 300;
      const next = (): void => {
        const r = nativeSpawn({ command: 'true', args: [], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 }, (exit) => {
          expect(exit).toEqual({ code: 0, signal: null });
          told.set(pid, (told.get(pid) ?? 0) + 1);
          if (--left > 0) next();
          else setTimeout(done, 50); // anything told late comes meanwhile
        });
        const pid = (r as { pid: number }).pid;
      };
      next();
    });
    expect(told.size).toBe(300);
    expect([...told.values()].every((n) => n === 1)).toBe(true);
    await Promise.all(forks.map((f) => new Promise((r) => (f.exitCode === null ? f.on('exit', r) : r(null)))));
  });

  it("waits without a thread of libuv's pool: a file read while five children run is not held up", async () => {
    // The pool has four threads: a waiter on each would hold the read until a child exits. The
    // children end only when killed, after the read.
    const exits: Array<NodeJS.Signals | null> = [];
    const pids: number[] = [];
    const all = Array.from(
      { length: 5 },
      () =>
        new Promise<void>((resolve) => {
          const r = nativeSpawn(
            { command: 'sleep', args: ['30'], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 },
            (exit) => {
              exits.push(exit.signal);
              resolve();
            },
          );
          if (!r || !('pid' in r)) throw new Error('sleep did not start');
          pids.push(r.pid);
        }),
    );
    await fs.promises.readFile(__filename);
    expect(exits).toEqual([]);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await Promise.all(all);
    expect(exits).toEqual(Array(5).fill('SIGKILL'));
  });

  it('an exception thrown by onExit is uncaught, as any callback of the loop', () => {
    const script = `
      const b = require(${JSON.stringify(ADDON)});
      process.on('uncaughtException', (err) => { console.log('uncaught: ' + err.message); process.exit(3); });
      b.spawn('true', 'true\\0', 'PATH=${PATH}\\0', -1, 1, 2, () => { throw new Error('from onExit'); });`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe('uncaught: from onExit');
    expect(r.status).toBe(3);
  });

  it('a worker that ends while its child runs leaves the process whole', async () => {
    const out = path.join(tempDir(), 'pid');
    const worker = new Worker(
      `const b = require(${JSON.stringify(ADDON)});
       const pid = b.spawn('sleep', 'sleep\\0' + '30\\0', 'PATH=${PATH}\\0', -1, 1, 2, () => {});
       require('node:fs').writeFileSync(${JSON.stringify(out)}, String(pid));
       require('node:worker_threads').parentPort.postMessage(pid);`,
      { eval: true },
    );
    const pid = await new Promise<number>((resolve) => worker.once('message', resolve));
    await worker.terminate();
    expect(fs.readFileSync(out, 'utf8')).toBe(String(pid));
    process.kill(pid, 'SIGKILL'); // left to the process, as the pool's waiter leaves it
  });

  it('reports errno codes and leaves ENOEXEC and NUL bytes to child_process', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'script'), 'echo hi\n', { mode: 0o755 });
    const never = () => {
      throw new Error('no child expected');
    };
    expect(
      nativeSpawn({ command: 'fspl-no-such-command', args: [], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 }, never),
    ).toMatchObject({ code: 'ENOENT' });
    expect(
      nativeSpawn({ command: dir, args: [], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 }, never),
    ).toMatchObject({ code: 'EACCES' });
    expect(
      nativeSpawn(
        { command: path.join(dir, 'script'), args: [], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 },
        never,
      ),
    ).toBeUndefined();
    expect(
      nativeSpawn({ command: 'true', args: ['a\0'], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 }, never),
    ).toBeUndefined();
    expect(
      nativeSpawn({ command: '', args: [], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 }, never),
    ).toBeUndefined();
  });

  it("a program that is not a string is the caller's mistake, said as one, not ENOMEM", () => {
    const never = () => {
      throw new Error('no child expected');
    };
    const bad = {
      command: ['sh', '-c', 'true'] as unknown as string,
      args: [],
      env: { PATH },
      stdin: -1,
      stdout: 1,
      stderr: 2,
    };
    let thrown: unknown;
    try {
      const r = nativeSpawn(bad, never);
      expect(r && 'code' in r ? r.code : undefined).not.toBe('ENOMEM');
    } catch (err) {
      thrown = err;
    }
    if (thrown) expect(String(thrown)).not.toMatch(/ENOMEM/);
  });
});

/** Start through nativeSpawnDetached: what onStarted said, and a promise of the exit (if it started). */
function startDetached(
  command: string,
  args: string[],
  fds: [number, number, number] = [-1, 1, 2],
  cwd?: string,
): Promise<{ start: DetachedStart; exit?: Promise<NativeExit> }> {
  return new Promise((resolve) => {
    let exited: (e: NativeExit) => void = () => {};
    const exit = new Promise<NativeExit>((r) => (exited = r));
    let exits = 0;
    const taken = nativeSpawnDetached(
      { command, args, env: { PATH }, stdin: fds[0], stdout: fds[1], stderr: fds[2] },
      cwd,
      (start) => resolve({ start, exit: start && 'pid' in start ? exit : undefined }),
      (e) => {
        if (++exits > 1) throw new Error('onExit called twice');
        exited(e);
      },
    );
    expect(taken).toBe(true);
  });
}

describe.skipIf(!HAVE_NATIVE)('nativeSpawnDetached (net firings)', () => {
  nativeOnly();
  it(
    'starts the child in the given directory, leading a session and ' +
      'process group of its own; reports its exit once it is reaped',
    async () => {
      const dir = fs.realpathSync(tempDir());
      const out = path.join(dir, 'out');
      const fd = fs.openSync(out, 'w');
      const { start, exit } = await startDetached(
        'sh',
        ['-c', 'pwd; cut -d" " -f1,5,6 /proc/$$/stat; exit 3'],
        [-1, fd, 2],
        dir,
      );
      expect(start && 'pid' in start).toBe(true);
      const pid = (start as { pid: number }).pid;
      expect(await exit).toEqual({ code: 3, signal: null });
      fs.closeSync(fd);
      const [cwd, ids] = fs.readFileSync(out, 'utf8').trim().split('\n');
      expect(cwd).toBe(dir);
      expect(ids!.trim().split(/\s+/).map(Number)).toEqual([pid, pid, pid]);
      expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
    },
  );

  it("calls back only after returning: the start happens on the addon's thread", () => {
    let called = false;
    expect(
      nativeSpawnDetached(
        { command: 'true', args: [], env: { PATH }, stdin: -1, stdout: 1, stderr: 2 },
        undefined,
        () => (called = true),
        () => {},
      ),
    ).toBe(true);
    expect(called).toBe(false);
  });

  it(
    'runs many at once (more than libuv has pool threads), ' +
      'each reaped and reported once; a signal is reported by name',
    async () => {
      const runs = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          startDetached('sh', ['-c', i === 9 ? 'kill -TERM $$; sleep 5' : `sleep 0.2; exit ${i}`]),
        ),
      );
      const exits = await Promise.all(runs.map((r) => r.exit));
      // a slow sweep in between would report nothing twice (startDetached throws)
      await new Promise((r) => setTimeout(r, 700));
      for (let i = 0; i < 9; i++) expect(exits[i]).toEqual({ code: i, signal: null });
      expect(exits[9]).toEqual({ code: null, signal: 'SIGTERM' });
    },
  );

  it('starts 200 at once, each with its own descriptors, all reported with distinct pids', async () => {
    const dir = tempDir();
    const fds = Array.from({ length: 200 }, (_, i) => fs.openSync(path.join(dir, `o${i}`), 'w'));
    const runs = await Promise.all(
      fds.map((fd, i) => startDetached('sh', ['-c', `echo ${i}; exit ${i % 7}`], [-1, fd, 2])),
    );
    const exits = await Promise.all(runs.map((r) => r.exit));
    for (const fd of fds) fs.closeSync(fd);
    expect(new Set(runs.map((r) => (r.start as { pid: number }).pid)).size).toBe(200);
    exits.forEach((e, i) => expect(e).toEqual({ code: i % 7, signal: null }));
    fds.forEach((_, i) => expect(fs.readFileSync(path.join(dir, `o${i}`), 'utf8')).toBe(`${i}\n`));
  });

  it(
    'reports the exit of a child that exited before its ' + 'pid reached this thread (its SIGCHLD gone already)',
    async () => {
      // The event loop is held while the child starts and exits: its SIGCHLD is handled before the
      // pid is known; only the reap after registering it can see the zombie.
      const pending = startDetached('sh', ['-c', 'exit 5']);
      const until = Date.now() + 300;
      while (Date.now() < until);
      await new Promise((r) => setTimeout(r, 50)); // let the SIGCHLD listener run, if any
      const { exit } = await pending;
      expect(await exit).toEqual({ code: 5, signal: null });
    },
  );

  it('reports a command or directory that is not there as ENOENT', async () => {
    expect((await startDetached('fspl-no-such-command', [])).start).toMatchObject({ code: 'ENOENT' });
    expect((await startDetached('sh', ['-c', 'true'], [-1, 1, 2], '/no/such/dir')).start).toMatchObject({
      code: 'ENOENT',
    });
  });
});

describe.skipIf(!HAVE_NATIVE)("the child's own table of descriptors (native/child_start.c)", () => {
  nativeOnly();

  it('holding 1,500 descriptors, gives the command those child_process gives it: the standard ones and what was passed in', () => {
    // The child makes its own table of the descriptors below the slots, not a copy of ours; what
    // this Node got without close-on-exec from vitest (if anything) must still reach it.
    const script = `
      const b = require(${JSON.stringify(ADDON)});
      const fs = require('node:fs');
      for (let i = 0; i < 1500; i++) fs.openSync('/dev/null', 'r');
      const list = 'ls /proc/self/fd';
      const viaNode = require('node:child_process').execFileSync('sh', ['-c', list], { encoding: 'utf8' });
      const out = fs.openSync(process.argv[1], 'w');
      b.spawn('sh', 'sh\\0-c\\0' + list + '\\0', 'PATH=${PATH}\\0', -1, out, 2, (code) => {
        console.log(JSON.stringify({ viaNode, ours: fs.readFileSync(process.argv[1], 'utf8'), code }));
      });`;
    const file = path.join(tempDir(), 'ours');
    const r = spawnSync(process.execPath, ['-e', script, file], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const { viaNode, ours, code } = JSON.parse(r.stdout) as { viaNode: string; ours: string; code: number };
    expect(code).toBe(0);
    // ls's own directory is the lowest free number: the same in both, as the tables hold the same
    expect(ours.split('\n').map(Number)).toEqual(viaNode.split('\n').map(Number));
    expect(ours.split('\n').slice(0, 3)).toEqual(['0', '1', '2']);
    expect(ours.split('\n').length).toBeLessThan(10);
  });

  it('where a sandbox refuses the child a table of its own, says ENOSYS once and clones no more: child_process starts the jobs', () => {
    // A shim preloaded into a Node of its own makes close_range and unshare fail, as an older
    // container's seccomp profile does; it counts the children that tried (each in a file of its own).
    const dir = tempDir();
    const shim = path.join(dir, 'refuse.so');
    fs.writeFileSync(
      path.join(dir, 'refuse.c'),
      `#define _GNU_SOURCE
       #include <dlfcn.h>
       #include <errno.h>
       #include <fcntl.h>
       #include <stdarg.h>
       #include <stdio.h>
       #include <stdlib.h>
       #include <sys/syscall.h>
       #include <unistd.h>
       static void mark(void) { char p[4096]; const char* d = getenv("REFUSE_DIR");
         if (d && snprintf(p, sizeof p, "%s/tried-%d", d, (int)getpid()) > 0) close(open(p, O_CREAT | O_WRONLY, 0600)); }
       long syscall(long n, ...) {
         va_list ap; va_start(ap, n); long a[6]; for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long); va_end(ap);
         if (n == SYS_close_range) { mark(); errno = ENOSYS; return -1; }
         return ((long (*)(long, ...))dlsym((void*)-1l, "syscall"))(n, a[0], a[1], a[2], a[3], a[4], a[5]);
       }
       int unshare(int flags) { errno = EPERM; return -1; }`,
    );
    execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', shim, path.join(dir, 'refuse.c'), '-ldl']);
    const q = path.join(dir, 'q');
    execFileSync(FSPL_BIN, ['queue-init', '-q', q]);
    for (const word of ['one', 'two'])
      execFileSync('sh', [
        '-c',
        `echo ${word} | ${FSPL_BIN} prepare -s ${q}-seq -i - | ${FSPL_BIN} queue-write -q ${q}`,
      ]);
    const out = path.join(dir, 'out');
    const env: NodeJS.ProcessEnv = { ...process.env, LD_PRELOAD: shim, REFUSE_DIR: dir };
    delete env.FSPL_NO_NATIVE;
    const direct = spawnSync(
      process.execPath,
      [
        '-e',
        `const b = require(${JSON.stringify(ADDON)});
         const r = [0, 1].map(() => b.spawn('true', 'true\\0', 'PATH=${PATH}\\0', -1, 1, 2, () => {}));
         console.log(JSON.stringify(r));`,
      ],
      { env, encoding: 'utf8' },
    );
    expect(JSON.parse(direct.stdout)).toEqual([-38, -38]); // ENOSYS, the second without a clone
    const tried = () => fs.readdirSync(dir).filter((f) => f.startsWith('tried-')).length;
    expect(tried()).toBe(1);
    execFileSync(FSPL_BIN, ['queue-process', '-q', q, 'sh', '--', '-c', `cat >> ${out}`], { env });
    expect(fs.readFileSync(out, 'utf8')).toBe('one\ntwo\n');
    expect(tried()).toBe(2); // one more for that process's first start, then none
  });

  it("lets go of the child's stdout at once: a pipe's reader sees its end when the command exits", async () => {
    const fifo = path.join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    const reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    reader.stdout.on('data', (d) => (text += d));
    const ended = new Promise((resolve) => reader.on('close', resolve));
    const writeFd = fs.openSync(fifo, 'w'); // once cat has opened it
    const exited = new Promise((resolve) => {
      const r = nativeSpawn(
        { command: 'sh', args: ['-c', 'echo through'], env: { PATH }, stdin: -1, stdout: writeFd, stderr: 2 },
        resolve,
      );
      expect(r && 'pid' in r).toBe(true);
    });
    fs.closeSync(writeFd);
    expect(await exited).toEqual({ code: 0, signal: null });
    // A writer still held by the addon would keep cat reading for ever.
    const late = new Promise((resolve) => setTimeout(() => resolve('still open'), 10_000).unref());
    expect(await Promise.race([ended, late])).toBe(0);
    expect(text).toBe('through\n');
  });
});

describe('runDetached (src/sys/exec.ts), with and without the addon', () => {
  for (const mode of HAVE_NATIVE ? ['native', 'child_process'] : ['child_process']) {
    describe(mode, () => {
      let saved: string | undefined;
      beforeEach(() => {
        saved = process.env.FSPL_NO_NATIVE;
        if (mode === 'native') delete process.env.FSPL_NO_NATIVE;
        else process.env.FSPL_NO_NATIVE = '1';
      });
      afterEach(() => {
        if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
        else process.env.FSPL_NO_NATIVE = saved;
      });
      const base = { args: [], env: { PATH }, stdin: 'ignore' as const, stdout: 1, stderr: 2, killGraceMs: 200 };

      it('rejects with StartError "No such file or directory" for a command that is not there', async () => {
        await expect(runDetached({ ...base, command: 'fspl-no-such-command' })).rejects.toMatchObject({
          why: 'No such file or directory',
        });
      });

      it('kills the group when aborted at once, before the pid can be known; the whole group goes', async () => {
        const dir = tempDir();
        const mark = path.join(dir, 'grandchild');
        const ac = new AbortController();
        // A grandchild that would outlive a kill of the leader alone.
        const run = runDetached({
          ...base,
          command: 'sh',
          args: ['-c', `sh -c 'sleep 1; touch ${mark}' & wait`],
          signal: ac.signal,
        });
        ac.abort();
        const r = await run;
        expect(r).toMatchObject({ abandoned: true, timedOut: false });
        expect(r.signal === 'SIGTERM' || r.signal === 'SIGKILL').toBe(true);
        await new Promise((res) => setTimeout(res, 1300));
        expect(fs.existsSync(mark)).toBe(false);
      });

      it('times out many commands racing their starts, each killed and reported once', async () => {
        const runs = await Promise.all(
          Array.from({ length: 20 }, () => runDetached({ ...base, command: 'sleep', args: ['5'], timeout: 0.001 })),
        );
        for (const r of runs)
          expect(r).toMatchObject({ timedOut: true, abandoned: false, signal: 'SIGTERM', status: 128 + 15 });
      });
    });
  }
});

describe.skipIf(!HAVE_NATIVE)('readSmall, lockOpen and statInfo (seqfiles and lock files in one call)', () => {
  nativeOnly();
  it('read and lock only a regular file with one name, never through a link nor waiting on a FIFO', () => {
    const b = loadNative()!;
    const dir = tempDir();
    const file = path.join(dir, 'nextseq');
    fs.writeFileSync(file, '42\n');
    const buf = Buffer.alloc(4096);
    expect(b.readSmall!(file, buf)).toBe(3);
    expect(buf.toString('utf8', 0, 3)).toBe('42\n');
    fs.symlinkSync(file, path.join(dir, 'link'));
    fs.linkSync(file, path.join(dir, 'hard'));
    spawnSync('mkfifo', [path.join(dir, 'fifo')]);
    for (const name of ['link', 'hard', 'fifo', 'missing']) {
      expect(b.readSmall!(path.join(dir, name), buf), name).toBeLessThan(0);
      expect(b.lockOpen!(path.join(dir, name), false), name).toBeLessThan(0);
    }
    // The hard link made the file two names: refused too, until it has one again.
    expect(b.lockOpen!(file, false)).toBeLessThan(0);
    fs.rmSync(path.join(dir, 'hard'));
    const lock = path.join(dir, 'nextseq.lock');
    const fd = b.lockOpen!(lock, true);
    expect(fd).toBeGreaterThan(2);
    // Held: another open description can't take it; once closed, it can.
    expect(b.lockOpen!(lock, false)).toBe(-11); // EWOULDBLOCK
    fs.closeSync(fd);
    const again = b.lockOpen!(lock, false);
    expect(again).toBeGreaterThan(2);
    fs.closeSync(again);
    expect(b.lockOpen!(path.join(dir, 'missing.lock'), false)).toBe(-2); // ENOENT: not made without create
    expect(fs.existsSync(path.join(dir, 'missing.lock'))).toBe(false);
  });

  it('statInfo says what stat and lstat say of a name: mode, owner, size', () => {
    const b = loadNative()!;
    const dir = tempDir();
    const file = path.join(dir, 'nextseq');
    fs.writeFileSync(file, '42\n', { mode: 0o640 });
    fs.symlinkSync(file, path.join(dir, 'link'));
    const out = new Float64Array(4);
    for (const [name, follow] of [
      ['nextseq', false],
      ['link', true],
      ['link', false],
      ['.', true],
    ] as const) {
      const p = path.join(dir, name);
      const st = follow ? fs.statSync(p) : fs.lstatSync(p);
      expect(b.statInfo!(p, follow, out), name).toBe(0);
      expect([...out], `${name} ${follow}`).toEqual([st.mode, st.uid, st.gid, st.size]);
    }
    expect(b.statInfo!(path.join(dir, 'missing'), true, out)).toBe(-2);
    expect(b.statInfo!(path.join(file, 'below'), false, out)).toBe(-20); // ENOTDIR
  });
});

// ------------------------------------------------------------------------------------------------
// Header reads

const header = (seq: bigint, cmd: PacketHeader['cmd'], secs = 1_700_000_000n, nanos = 5): PacketHeader => ({
  seq,
  ctime: { secs, nanos },
  cmd,
});
const b = (s: string) => Buffer.from(s, 'latin1');

/** Recompute both CRCs after editing a packet's metadata. */
function fixCrcs(packet: Buffer): Buffer {
  const meta = packet.subarray(PREFIX_LENGTH, PREFIX_LENGTH + Number(packet.readBigUInt64BE(14)));
  packet.writeUInt32BE(crc32(meta), 22);
  packet.writeUInt32BE(crc32(packet.subarray(0, 26)), 26);
  return packet;
}

/** A packet whose metadata is `meta`, CRCs right. */
function withMetadata(meta: Buffer): Buffer {
  const p = Buffer.alloc(PREFIX_LENGTH + meta.length);
  p.write('*FILESPOOLER', 'ascii');
  p.writeUInt16BE(1, 12);
  p.writeBigUInt64BE(BigInt(meta.length), 14);
  meta.copy(p, PREFIX_LENGTH);
  return fixCrcs(p);
}

/** What the pure-JS decoder makes of a file's first bytes: the header, or the error message. */
function jsDecode(bytes: Buffer): PacketHeader | string {
  try {
    return decodeHeader(bytes).header;
  } catch (err) {
    return (err as Error).message;
  }
}

describe.skipIf(!HAVE_NATIVE)('nativeReadHeads', () => {
  nativeOnly();
  it('reads the first bytes of each file, with errno codes for the ones it cannot read', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'a'), 'hello');
    fs.writeFileSync(path.join(dir, 'empty'), '');
    fs.writeFileSync(path.join(dir, 'big'), Buffer.alloc(10_000, 7));
    fs.mkdirSync(path.join(dir, 'sub'));
    const r = nativeReadHeads(dir, ['a', 'missing', 'empty', 'big', 'sub', 'a'], 4096)!;
    // ENOENT; EMLINK: not a regular file with one name (a directory here: src/sys/untrusted.ts openJobFile)
    expect(Array.from(r.lengths)).toEqual([5, -2, 0, 4096, -31, 5]);
    expect(r.bytes.length).toBe(5 + 4096 + 5);
    expect(r.bytes.subarray(0, 5).toString()).toBe('hello');
    expect(r.bytes.subarray(5, 5 + 4096).equals(Buffer.alloc(4096, 7))).toBe(true);
    for (let i = 0; i < 6; i++) expect(r.header(i)).toBeUndefined();
    expect(nativeReadHeads(path.join(dir, 'missing'), ['a'], 4096)).toBeUndefined();
  });

  it('decodes headers in the usual encoding exactly as the JS decoder, and leaves the others to it', () => {
    const dir = tempDir();
    const good: Array<[string, Buffer]> = [
      ['nop', encodeHeader(header(1n, { kind: 'NOP' }))],
      ['fail', encodeHeader(header(18446744073709551615n, { kind: 'Fail' }, -9223372036854775808n, 4294967295))],
      [
        'cmd',
        encodeHeader(
          header(
            300n,
            {
              kind: 'Command',
              params: [b('a'), b(''), b('\x00\x7f\x80\xff')],
              env: [
                [b('K'), b('v\xe9')],
                [b(''), b('')],
              ],
            },
            -1n,
            0,
          ),
        ),
      ],
      ['cmd-empty', encodeHeader(header(70000n, { kind: 'Command', params: [], env: [] }, 9223372036854775807n))],
      [
        'cmd-many',
        encodeHeader(
          header(2n, { kind: 'Command', params: Array.from({ length: 40 }, (_, i) => b('p'.repeat(i))), env: [] }),
        ),
      ],
    ];
    const nopMeta = encodeHeader(header(1n, { kind: 'NOP' })).subarray(PREFIX_LENGTH);
    const other: Array<[string, Buffer]> = [
      // Valid, but not in the usual encoding: the JS decoder reads them.
      ['str8-key', withMetadata(Buffer.concat([b('\x83\xd9\x03seq\x01'), nopMeta.subarray(6)]))],
      [
        'bin-param',
        withMetadata(
          Buffer.concat([
            nopMeta.subarray(0, nopMeta.length - 4),
            b('\x81\xa7Command\x82\xa6params\x91\xc4\x02hi\xa3env\x90'),
          ]),
        ),
      ],
      ['keys-reordered', withMetadata(Buffer.concat([b('\x83\xa5ctime\x92\x01\x02\xa3seq\x05\xa8cmd_type\xa3NOP')]))],
      [
        'uint16-byte',
        withMetadata(
          Buffer.concat([
            nopMeta.subarray(0, nopMeta.length - 4),
            b('\x81\xa7Command\x82\xa6params\x91\x91\xcd\x00\x41\xa3env\x90'),
          ]),
        ),
      ],
      // Invalid: the JS decoder's errors.
      ['trailing', withMetadata(Buffer.concat([nopMeta, b('\x00')]))],
      ['negative-seq', withMetadata(Buffer.concat([b('\x83\xa3seq\xff'), nopMeta.subarray(6)]))],
      [
        'byte-256',
        withMetadata(
          Buffer.concat([
            nopMeta.subarray(0, nopMeta.length - 4),
            b('\x81\xa7Command\x82\xa6params\x91\x91\xcd\x01\x00\xa3env\x90'),
          ]),
        ),
      ],
      [
        'bad-meta-crc',
        (() => {
          const p = encodeHeader(header(3n, { kind: 'NOP' }));
          p[p.length - 1] ^= 1;
          return p;
        })(),
      ],
      [
        'bad-prefix-crc',
        (() => {
          const p = encodeHeader(header(3n, { kind: 'NOP' }));
          p[27] ^= 1;
          return p;
        })(),
      ],
      [
        'bad-tag',
        (() => {
          const p = encodeHeader(header(3n, { kind: 'NOP' }));
          p[0] = 0x21;
          return p;
        })(),
      ],
      [
        'version-2',
        (() => {
          const p = encodeHeader(header(3n, { kind: 'NOP' }));
          p.writeUInt16BE(2, 12);
          return fixCrcs(p);
        })(),
      ],
      ['short', encodeHeader(header(3n, { kind: 'NOP' })).subarray(0, 20)],
      ['truncated-meta', encodeHeader(header(3n, { kind: 'NOP' })).subarray(0, 40)],
      ['unknown-cmd', withMetadata(Buffer.concat([nopMeta.subarray(0, nopMeta.length - 4), b('\xa3BAD')]))],
      ['garbage', Buffer.from('not a packet at all, just some text that is long enough')],
    ];
    const files = [...good, ...other];
    for (const [name, bytes] of files) fs.writeFileSync(path.join(dir, name), Buffer.concat([bytes, b('payload')]));
    const r = nativeReadHeads(
      dir,
      files.map(([n]) => n),
      4096,
    )!;
    let offset = 0;
    files.forEach(([name, bytes], i) => {
      const n = r.lengths[i]!;
      expect(n, name).toBe(bytes.length + 7);
      expect(r.bytes.subarray(offset, offset + n).equals(Buffer.concat([bytes, b('payload')])), name).toBe(true);
      offset += n;
      const js = jsDecode(bytes);
      const native = r.header(i);
      if (i < good.length) {
        expect(typeof js, `${name}: ${js as string}`).toBe('object');
        expect(native, name).toEqual(js);
      } else {
        expect(native, name).toBeUndefined();
      }
    });
    // The JS decoder does accept the valid unusual encodings (so the fallback matters).
    for (const name of ['str8-key', 'bin-param', 'keys-reordered', 'uint16-byte'])
      expect(typeof jsDecode(other.find(([n]) => n === name)![1]), name).toBe('object');
  });

  it('gives the same for a large directory (read by two threads) as file by file', () => {
    const dir = tempDir();
    const names: string[] = [];
    const contents: Buffer[] = [];
    for (let i = 0; i < 2500; i++) {
      const cmd: PacketHeader['cmd'] =
        i % 5 === 0
          ? { kind: 'NOP' }
          : i % 5 === 1
            ? { kind: 'Fail' }
            : {
                kind: 'Command',
                params: Array.from({ length: i % 4 }, (_, k) => b(`p${i}-${k}\xff`)),
                env: i % 3 ? [[b(`K${i}`), b(`v${i}`)]] : [],
              };
      let bytes = Buffer.concat([encodeHeader(header(BigInt(i), cmd, BigInt(i) - 1000n, i)), b(`payload ${i}`)]);
      if (i % 97 === 0) bytes = bytes.subarray(0, 10); // short
      if (i % 101 === 0) bytes[bytes.length - 20] ^= 1; // damaged
      const name = `f${i}`;
      names.push(name);
      contents.push(bytes);
      if (i % 89 !== 0) fs.writeFileSync(path.join(dir, name), bytes); // some missing: ENOENT
    }
    const r = nativeReadHeads(dir, names, 4096)!;
    let offset = 0;
    names.forEach((name, i) => {
      const n = r.lengths[i]!;
      if (i % 89 === 0) {
        expect(n, name).toBe(-2);
        expect(r.header(i)).toBeUndefined();
        return;
      }
      expect(n, name).toBe(contents[i]!.length);
      expect(r.bytes.subarray(offset, offset + n).equals(contents[i]!), name).toBe(true);
      offset += n;
      const js = jsDecode(contents[i]!);
      if (typeof js === 'string') expect(r.header(i), name).toBeUndefined();
      else expect(r.header(i), name).toEqual(js);
    });
    expect(offset).toBe(r.bytes.length);
  });

  it('agrees with the JS decoder on random headers and random corruptions of them', () => {
    const bytesArb = fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u));
    const cmdArb = fc.oneof(
      fc.constant({ kind: 'NOP' as const }),
      fc.constant({ kind: 'Fail' as const }),
      fc.record({
        kind: fc.constant('Command' as const),
        params: fc.array(bytesArb, { maxLength: 20 }),
        env: fc.array(fc.tuple(bytesArb, bytesArb), { maxLength: 8 }),
      }),
    );
    const headerArb = fc.record({
      seq: fc.bigInt({ min: 0n, max: 18446744073709551615n }),
      ctime: fc.record({
        secs: fc.bigInt({ min: -9223372036854775808n, max: 9223372036854775807n }),
        nanos: fc.integer({ min: 0, max: 4294967295 }),
      }),
      cmd: cmdArb,
    }) as fc.Arbitrary<PacketHeader>;
    const dir = tempDir();
    let file = 0;
    fc.assert(
      fc.property(
        headerArb,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }),
        fc.boolean(),
        (h, edits, fix) => {
          const packet = encodeHeader(h);
          const metaLen = packet.length - PREFIX_LENGTH;
          // Corrupt some metadata bytes, then (usually) make the CRCs right again so that the
          // MessagePack parsers see the damage.
          for (const [at, v] of edits) packet[PREFIX_LENGTH + (at % metaLen)] = v;
          if (fix) fixCrcs(packet);
          const name = `f${file++}`;
          fs.writeFileSync(path.join(dir, name), packet);
          const r = nativeReadHeads(dir, [name], 4096)!;
          const js = jsDecode(packet);
          const native = r.header(0);
          if (edits.length === 0) expect(native).toEqual(h);
          if (native !== undefined) expect(native).toEqual(js);
          fs.rmSync(path.join(dir, name));
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe.skipIf(!HAVE_NATIVE)('nativeOpenHead', () => {
  nativeOnly();
  it(
    'decodes a header in the usual encoding and leaves the descriptor ' +
      'at the payload; leaves the others at 0, for the JS decoder',
    () => {
      const dir = tempDir();
      const files: Array<[string, Buffer, boolean]> = [
        ['nop', encodeHeader(header(1n, { kind: 'NOP' })), true],
        [
          'cmd',
          encodeHeader(
            header(300n, { kind: 'Command', params: [b('a'), b('\x00\xff')], env: [[b('K'), b('v\xe9')]] }, -1n, 7),
          ),
          true,
        ],
        // Longer than the 4 KiB read at once.
        ['long', encodeHeader(header(2n, { kind: 'Command', params: [b('p'.repeat(5000))], env: [] })), false],
        [
          'bad-meta-crc',
          (() => {
            const p = encodeHeader(header(3n, { kind: 'NOP' }));
            p[p.length - 1] ^= 1;
            return p;
          })(),
          false,
        ],
        ['garbage', b('not a packet'), false],
        ['empty', b(''), false],
      ];
      for (const [name, bytes] of files) {
        const file = path.join(dir, name);
        fs.writeFileSync(file, Buffer.concat([bytes, b('payload')]));
        const r = nativeOpenHead(file, 4096)!;
        try {
          const rest = Buffer.alloc(bytes.length + 100);
          const n = fs.readSync(r.fd, rest, 0, rest.length, null);
          if (files.find(([f]) => f === name)![2]) {
            expect(r.header, name).toEqual(jsDecode(bytes));
            expect(r.payloadOffset, name).toBe(bytes.length);
            expect(rest.subarray(0, n).toString('latin1'), name).toBe('payload');
          } else {
            expect(r.header, name).toBeUndefined();
            expect(r.payloadOffset, name).toBe(0);
            expect(rest.subarray(0, n).equals(Buffer.concat([bytes, b('payload')]).subarray(0, n)), name).toBe(true);
          }
        } finally {
          fs.closeSync(r.fd);
        }
      }
      expect(nativeOpenHead(path.join(dir, 'missing'), 4096)).toBeUndefined();
    },
  );

  it('opens jobs for Queue.openJob as the JS path does: the same header, offset and payload', async () => {
    const dir = tempDir();
    const q = Queue.init(path.join(dir, 'q'));
    const names = [
      q.writeBuffer(
        Buffer.concat([encodeHeader(header(1n, { kind: 'Command', params: [b('x')], env: [] })), b('one')]),
      ),
      q.writeBuffer(
        Buffer.concat([
          encodeHeader(header(2n, { kind: 'Command', params: [b('p'.repeat(5000))], env: [] })),
          b('two'),
        ]),
      ),
    ];
    const open = async (name: string) => {
      const o = await q.openJob(name);
      try {
        if (o.kind !== 'plain') throw new Error('a queue without a decoder opens plain jobs');
        const buf = Buffer.alloc(100);
        const n = fs.readSync(o.payload, buf, 0, 100, null);
        return { header: o.header, payloadOffset: o.payloadOffset, payload: buf.subarray(0, n).toString() };
      } finally {
        o.close();
      }
    };
    for (const name of names) expect(await open(name), name).toEqual(await withNoNative('1', () => open(name)));
  });

  it('does not wait on a FIFO swapped in for a job file, nor follow a link: it gives nothing', () => {
    const dir = tempDir();
    const fifo = path.join(dir, 'fspl-fifo.fspl');
    execFileSync('mkfifo', [fifo]);
    // A writer 2 s from now: an open that waited for one would return then (not hang the test).
    const writer = spawn('sh', ['-c', 'sleep 2; exec 3>"$0"; sleep 1', fifo], { stdio: 'ignore' });
    try {
      const t0 = Date.now();
      expect(nativeOpenHead(fifo, 4096)).toBeUndefined();
      expect(Date.now() - t0).toBeLessThan(1500);
    } finally {
      writer.kill('SIGKILL');
    }
    fs.writeFileSync(path.join(dir, 'target'), 'x');
    fs.symlinkSync(path.join(dir, 'target'), path.join(dir, 'fspl-link.fspl'));
    expect(nativeOpenHead(path.join(dir, 'fspl-link.fspl'), 4096)).toBeUndefined();
  });
});

describe('queue scans (src/queue/queue.ts)', () => {
  /** A queue with good and bad job files; returns it and the debug log of a scan. */
  async function scanWithLog(dir: string): Promise<{ entries: unknown[]; log: string[] }> {
    const log: string[] = [];
    const q = new Queue(dir, { logger: createLogger('debug', (line) => log.push(line)) });
    const entries = await q.scan();
    return { entries, log };
  }

  function makeQueue(): string {
    const dir = tempDir();
    const q = Queue.init(path.join(dir, 'q'));
    q.writeBuffer(encodeHeader(header(1n, { kind: 'NOP' })));
    q.writeBuffer(
      Buffer.concat([
        encodeHeader(header(2n, { kind: 'Command', params: [b('x')], env: [[b('A'), b('1')]] })),
        b('payload'),
      ]),
    );
    // a header over 4 KiB
    q.writeBuffer(encodeHeader(header(3n, { kind: 'Command', params: [Buffer.alloc(5000, 0x61)], env: [] })));
    q.writeBuffer(withMetadata(b('\x83\xa5ctime\x92\x01\x02\xa3seq\x04\xa8cmd_type\xa4Fail'))); // unusual but valid
    const jobs = q.jobsDir;
    fs.writeFileSync(
      path.join(jobs, 'fspl-bad-crc.fspl'),
      (() => {
        const p = encodeHeader(header(5n, { kind: 'NOP' }));
        p[p.length - 1] ^= 1;
        return p;
      })(),
    );
    fs.writeFileSync(path.join(jobs, 'fspl-short.fspl'), 'short');
    fs.writeFileSync(path.join(jobs, 'fspl-empty.fspl'), '');
    fs.mkdirSync(path.join(jobs, 'fspl-dir.fspl'));
    fs.writeFileSync(path.join(jobs, 'not-a-job'), 'x');
    return q.dir;
  }

  it('reads the same headers and logs the same lines with and without the addon', async () => {
    const dir = makeQueue();
    const saved = process.env.FSPL_NO_NATIVE;
    try {
      delete process.env.FSPL_NO_NATIVE;
      const withNative = await scanWithLog(dir); // the fallback's when the addon is not built
      process.env.FSPL_NO_NATIVE = '1';
      const without = await scanWithLog(dir);
      expect(withNative.entries).toEqual(without.entries);
      expect(withNative.log).toEqual(without.log);
      expect(without.entries).toHaveLength(4);
      expect(without.log.filter((l) => l.includes('Skipping'))).toHaveLength(4);
      expect(without.log.join('')).toMatch(
        /Skipping "fspl-dir\.fspl": Refusing \S+fspl-dir\.fspl: it is not a regular file/,
      );
      expect(without.log.join('')).toContain('Skipping "fspl-bad-crc.fspl": CRC-32 mismatch on metadata');
    } finally {
      if (saved === undefined) delete process.env.FSPL_NO_NATIVE;
      else process.env.FSPL_NO_NATIVE = saved;
    }
  });
});

// ------------------------------------------------------------------------------------------------
// The CLI, both ways

describe('fspl queue-process and queue-ls with and without the addon', () => {
  it('run jobs with the same argv, environment, stdin and results', () => {
    const dir = tempDir();
    const qdir = path.join(dir, 'q');
    const fspl = (args: string[], opts: { input?: string | Buffer; env?: Record<string, string> } = {}) =>
      execFileSync(process.execPath, [FSPL_BIN, ...args], {
        input: opts.input,
        env: { PATH, TZ: 'UTC', ...opts.env },
        cwd: dir,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    fspl(['queue-init', '-q', qdir]);
    const seq = path.join(dir, 'seq');
    for (const [payload, params] of [
      ['first payload\n', ['p1', 'p 2']],
      ['', []],
      ['third\0binary\xff', ['x']],
    ] as const) {
      const packet = fspl(['prepare', '-s', seq, '-i', '-', '--', ...params], {
        input: Buffer.from(payload, 'latin1'),
        env: { FSPL_SET_FOO: 'bar' },
      });
      fspl(['queue-write', '-q', qdir], { input: packet });
    }
    fspl(['queue-write', '-q', qdir], { input: fspl(['prepare-fail', '-s', seq]) });
    const template = path.join(dir, 'template');
    fs.cpSync(qdir, template, { recursive: true });
    const record =
      'printf "argv:%s\\n" "$0" "$@"; tr "\\0" "\\n" < /proc/$$/environ | ' +
      'grep -v "^FSPL_NO_NATIVE=" | LC_ALL=C sort; printf "stdin:"; md5sum; ' +
      'test "$FSPL_SEQ" != 2 || exit 1; exec grep -E "^Sig(Blk|Ign|Cgt)" /proc/self/status';
    const results: Record<string, { ls: string; out: string; status: number; left: string[] }> = {};
    for (const mode of ['native', 'fallback']) {
      fs.rmSync(qdir, { recursive: true, force: true });
      fs.cpSync(template, qdir, { recursive: true });
      const env: Record<string, string> = mode === 'fallback' ? { FSPL_NO_NATIVE: '1' } : {};
      const ls = fspl(['queue-ls', '-q', qdir], { env }).toString();
      let out = '';
      let status = 0;
      try {
        out = fspl(
          [
            'queue-process',
            '-q',
            qdir,
            '--allow-job-params',
            '--on-error',
            'leave',
            '--output-to',
            'saveboth',
            'sh',
            '--',
            '-c',
            record,
            'arg0',
          ],
          {
            env,
          },
        ).toString();
      } catch (err) {
        status = (err as { status: number }).status;
      }
      const left = fs.readdirSync(path.join(qdir, 'jobs')).sort();
      const outs = left
        .filter((f) => f.endsWith('.out'))
        .map((f) => fs.readFileSync(path.join(qdir, 'jobs', f), 'utf8'));
      results[mode] = { ls, out: out + outs.sort().join('----\n'), status, left };
    }
    // The signal state differs in glibc's internal signals 32 and 33 only (see above).
    const internal = (o: string) => o.replace(/^SigIgn:\t0000000180000000$/gm, 'SigIgn:\t0000000000000000');
    expect({ ...results.native, out: internal(results.native!.out) }).toEqual(results.fallback);
    expect(results.native!.out).toContain('argv:arg0\nargv:p1\nargv:p 2\n');
    expect(results.native!.out).toContain('FSPL_SET_FOO=bar\n');
    expect(results.fallback!.out).toContain('SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n');
    expect(results.native!.ls.split('\n').filter(Boolean)).toHaveLength(5); // a title and 4 jobs
  });
});
