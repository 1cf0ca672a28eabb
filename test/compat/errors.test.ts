/**
 * Exit statuses for error cases. Runtime errors: both exit 1; the reference's message starts
 * with `Error: `, ours is exactly one `Error: ` line (the wording differs on purpose). Usage
 * errors: both exit 2 (wording differs on purpose). Side effects are compared where they matter.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  both,
  buildQueue,
  describeCompat,
  expectRuntimeError,
  expectSameOutput,
  fspl,
  makePacket,
  type RunOptions,
  readIf,
  snapshot,
  tmpDir,
  tmpDirForSuite,
} from './harness.js';

describeCompat('error cases and exit statuses', () => {
  let root: string;
  let packet: Buffer;

  beforeAll(async () => {
    root = tmpDirForSuite();
    packet = await makePacket('ref', { seq: 1, params: ['p'], payload: 'payload' });
    // q: a queue with job 1; dq: duplicate seq 1 and a job 2; aq: append-only with job 1;
    // ed: an empty directory; nq: missing.
    await buildQueue('ref', path.join(root, 'q'), [{ seq: 1, payload: 'one' }]);
    await buildQueue('ref', path.join(root, 'dq'), [
      { seq: 1, payload: 'a' },
      { seq: 1, payload: 'b' },
      { seq: 2, payload: 'c' },
    ]);
    fs.mkdirSync(path.join(root, 'ed'));
    fs.writeFileSync(path.join(root, 'afile'), 'x');
    fs.writeFileSync(path.join(root, 'noexec.sh'), '#!/bin/sh\nexit 0\n', { mode: 0o644 });
  });
  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  const opts = (extra: RunOptions = {}): RunOptions => ({ cwd: root, ...extra });

  for (const dir of ['nq', 'ed']) {
    const what = dir === 'nq' ? 'a missing queue directory' : 'an empty directory (no jobs/, no nextseq.lock)';
    test(`every queue command on ${what} exits 1`, async () => {
      for (const args of [
        ['queue-get-next', '-q', dir],
        ['queue-set-next', '-q', dir, '5'],
        ['queue-process', '-q', dir, 'true'],
        ['queue-process', '-q', dir, '--order-by', 'timestamp', 'true'],
        ['queue-info', '-q', dir, '-j', '1'],
        ['queue-payload', '-q', dir, '-j', '1'],
        ['queue-ls', '-q', dir],
        ['queue-ls', '-q', dir, '-d', 'cat'],
        ['queue-write', '-q', dir],
      ]) {
        const r = await both(args, opts({ stdin: packet }));
        expectRuntimeError(r, args.join(' '));
      }
      expect(fs.existsSync(path.join(root, 'nq')), 'nothing was created').toBe(false);
      expect(fs.readdirSync(path.join(root, 'ed')), 'nothing was created').toEqual([]);
    });
  }

  test('queue-ls -q "" exits 1', async () => {
    expectRuntimeError(await both(['queue-ls', '-q', ''], opts()), 'queue-ls -q ""');
  });

  test('queue-init on an existing directory, a file, or with a missing parent exits 1', async () => {
    for (const dir of ['q', 'q/', 'ed', 'afile', 'nodir/q']) {
      for (const extra of [[], ['--append-only']]) {
        const args = ['queue-init', '-q', dir, ...extra];
        expectRuntimeError(await both(args, opts()), args.join(' '));
      }
    }
    expect(fs.readdirSync(path.join(root, 'ed'))).toEqual([]);
    expect(fs.existsSync(path.join(root, 'nodir'))).toBe(false);
  });

  test('queue-init and queue-init --append-only create the same trees', async () => {
    const dir = tmpDir();
    for (const extra of [[], ['--append-only']]) {
      const name = extra.length ? 'aq' : 'q';
      const r = await both(['queue-init', '-q', name, ...extra], (impl) => {
        fs.mkdirSync(path.join(dir, impl), { recursive: true });
        return { cwd: path.join(dir, impl) };
      });
      expectSameOutput(r, `queue-init ${extra.join(' ')}`);
      expect(r.ours.stderr).toBe('');
      expect(snapshot(path.join(dir, 'ours', name))).toEqual(snapshot(path.join(dir, 'ref', name)));
    }
  });

  test('queue-info and queue-payload for a job that does not exist exit 1', async () => {
    for (const args of [
      ['queue-info', '-q', 'q', '-j', '5'],
      ['queue-payload', '-q', 'q', '-j', '5'],
      ['queue-info', '-q', 'q', '-j', '0'],
      ['queue-info', '-q', 'q', '-j', '18446744073709551615'],
      ['queue-payload', '-q', 'q', '-j', '2', '-d', 'cat'],
    ]) {
      expectRuntimeError(await both(args, opts()), args.join(' '));
    }
  });

  test('duplicate sequence numbers break queue-info and queue-payload for every -j', async () => {
    for (const args of [
      ['queue-info', '-q', 'dq', '-j', '1'],
      ['queue-info', '-q', 'dq', '-j', '2'],
      ['queue-info', '-q', 'dq', '-j', '99'],
      ['queue-payload', '-q', 'dq', '-j', '1'],
      ['queue-payload', '-q', 'dq', '-j', '2'],
    ]) {
      expectRuntimeError(await both(args, opts()), args.join(' '));
    }
    const ls = await both(['queue-ls', '-q', 'dq'], opts());
    expect(ls.ref.code).toBe(0);
    expect(ls.ours.code).toBe(0);
  });

  test(
    'append-only queue: queue-process, queue-get-next, ' + 'queue-set-next exit 1; ls, info, payload, write work',
    async () => {
      const dir = tmpDir();
      for (const impl of ['ref', 'ours'] as const) {
        fs.mkdirSync(path.join(dir, impl));
        const init = await fspl('ref', ['queue-init', '--append-only', '-q', 'aq'], { cwd: path.join(dir, impl) });
        expect(init.code, init.stderr).toBe(0);
      }
      const o = (impl: 'ref' | 'ours'): RunOptions => ({ cwd: path.join(dir, impl), stdin: packet });
      // queue-write works (no lock needed)
      const w = await both(['queue-write', '-q', 'aq'], o);
      expectSameOutput(w, 'queue-write to an append-only queue');
      expect(w.ref.code).toBe(0);
      for (const args of [
        ['queue-process', '-q', 'aq', 'true'],
        ['queue-process', '-q', 'aq', '--order-by', 'timestamp', '--on-error', 'delete', 'true'],
        ['queue-get-next', '-q', 'aq'],
        ['queue-set-next', '-q', 'aq', '1'],
      ]) {
        expectRuntimeError(await both(args, o), args.join(' '));
      }
      // the job file names differ (each side wrote its own), so compare what doesn't name them
      const ls = await both(['queue-ls', '-q', 'aq'], o);
      expect(ls.ref.code).toBe(0);
      expect(ls.ours.code, ls.ours.stderr).toBe(0);
      const strip = (b: Buffer) => b.toString().replace(/fspl-[0-9a-f-]{36}\.fspl/g, 'NAME');
      expect(strip(ls.ours.stdout)).toBe(strip(ls.ref.stdout));
      const info = await both(['queue-info', '-q', 'aq', '-j', '1'], o);
      expect(info.ref.code).toBe(0);
      expect(info.ours.code, info.ours.stderr).toBe(0);
      expect(strip(info.ours.stdout)).toBe(strip(info.ref.stdout));
      const payload = await both(['queue-payload', '-q', 'aq', '-j', '1'], o);
      expectSameOutput(payload, 'queue-payload on an append-only queue');
      expect(Object.keys(snapshot(path.join(dir, 'ours', 'aq'))).length).toBe(
        Object.keys(snapshot(path.join(dir, 'ref', 'aq'))).length,
      );
      for (const impl of ['ref', 'ours'] as const) {
        expect(fs.existsSync(path.join(dir, impl, 'aq', 'nextseq')), `${impl}: no nextseq created`).toBe(false);
        expect(fs.existsSync(path.join(dir, impl, 'aq', 'nextseq.lock')), `${impl}: no nextseq.lock created`).toBe(
          false,
        );
      }
    },
  );

  test('stdin-info, stdin-payload and stdin-process with empty or junk stdin exit 1', async () => {
    for (const stdin of [Buffer.alloc(0), Buffer.from('junk\n'), packet.subarray(0, 29), packet.subarray(0, 31)]) {
      for (const args of [['stdin-info'], ['stdin-payload'], ['stdin-process', 'true']]) {
        expectRuntimeError(await both(args, opts({ stdin })), `${args.join(' ')} with ${stdin.length} bytes of stdin`);
      }
    }
  });

  test('stdin-process: a missing or non-executable command, or a Fail packet, exits 1', async () => {
    const fail = await makePacket('ref', { seq: 1, kind: 'fail' });
    for (const [args, stdin] of [
      [['stdin-process', '/nonexistent/cmd'], packet],
      [['stdin-process', 'no-such-command-fspl-compat'], packet],
      [['stdin-process', './noexec.sh'], packet],
      [['stdin-process', '/tmp'], packet],
      [['stdin-process', 'true'], fail],
      [['stdin-process', 'false'], packet],
    ] as const) {
      const r = await both([...args], opts({ stdin }));
      expect(r.ref.code, `${args.join(' ')}: reference`).toBe(1);
      expect(r.ours.code, `${args.join(' ')}: ours; stderr ${r.ours.stderr}`).toBe(1);
      const lines = r.ours.stderr.split('\n').filter(Boolean);
      expect(lines.at(-1), `${args.join(' ')}: our last stderr line`).toMatch(/^Error: /);
    }
  });

  test(
    'stdin-process with PATH unset (env -i) finds the ' + 'command in the default path; with PATH= empty it does not',
    async () => {
      const unset = await both(['stdin-process', 'true'], opts({ stdin: packet, rawEnv: { TZ: 'UTC' } }));
      expectSameOutput(unset, 'stdin-process true with PATH unset');
      expect(unset.ref.code).toBe(0);
      const empty = await both(['stdin-process', 'true'], opts({ stdin: packet, rawEnv: { TZ: 'UTC', PATH: '' } }));
      expect(empty.ref.code).toBe(1);
      expect(empty.ours.code, empty.ours.stderr).toBe(1);
    },
  );

  test('a corrupt seqfile: prepare*, prepare-get-next exit 1, print nothing, leave the file alone', async () => {
    const contents = ['a b c \n', '', '\n', ' \n', '\n5\n', '5 6\n', '5abc\n', '-1\n', '18446744073709551616\n'];
    const dir = tmpDir();
    await Promise.all(
      contents.map(async (content, i) => {
        for (const args of [
          ['prepare-nop', '-s', 'sf'],
          ['prepare', '-s', 'sf', '--', 'x'],
          ['prepare-get-next', '-s', 'sf'],
        ]) {
          const r = await both(args, (impl) => {
            const d = path.join(dir, `${i}`, impl);
            fs.mkdirSync(d, { recursive: true });
            fs.writeFileSync(path.join(d, 'sf'), content);
            return { cwd: d };
          });
          expectRuntimeError(r, `${args.join(' ')} with seqfile ${JSON.stringify(content)}`);
          for (const impl of ['ref', 'ours'] as const) {
            expect(readIf(path.join(dir, `${i}`, impl, 'sf')), `${impl}: the seqfile is left alone`).toBe(content);
          }
        }
      }),
    );
  });

  test('queue side: a corrupt nextseq makes queue-process and queue-get-next exit 1', async () => {
    const dir = tmpDir();
    await buildQueue('ref', path.join(dir, 'q'), [{ seq: 1, payload: 'x' }]);
    fs.writeFileSync(path.join(dir, 'q', 'nextseq'), 'garbage\n');
    for (const args of [
      ['queue-process', '-q', 'q', 'true'],
      ['queue-get-next', '-q', 'q'],
    ]) {
      expectRuntimeError(await both(args, { cwd: dir }), `${args.join(' ')} with a corrupt nextseq`);
    }
    expect(readIf(path.join(dir, 'q', 'nextseq'))).toBe('garbage\n');
    expect(fs.readdirSync(path.join(dir, 'q', 'jobs'))).toHaveLength(1);
  });

  test('sender seqfile in a missing directory, or -s "", exits 1', async () => {
    for (const args of [
      ['prepare-nop', '-s', 'nodir/sf'],
      ['prepare', '-s', 'nodir/sf'],
      ['prepare-get-next', '-s', 'nodir/sf'],
      ['prepare-set-next', '-s', 'nodir/sf', '3'],
      ['prepare-nop', '-s', ''],
    ]) {
      expectRuntimeError(await both(args, opts()), args.join(' '));
    }
  });

  test(
    'prepare with a bad -i exits 1 (we check the input ' + 'before taking a number: stdout/seqfile may differ)',
    async () => {
      for (const input of ['missing-file', '', '/tmp']) {
        const args = ['prepare', '-s', 'sf', '-i', input];
        const r = await both(args, (impl) => {
          const d = path.join(tmpDir(), impl);
          fs.mkdirSync(d);
          return { cwd: d };
        });
        expectRuntimeError(r, args.join(' '), { stdoutMayDiffer: true });
        expect(r.ours.stdout.length, 'ours writes no partial packet').toBe(0);
      }
    },
  );
});
