import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FSPL_BIN, tempDir, VECTORS } from '../helpers.js';

function fspl(args: string[], opts: { input?: Buffer | string; cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const r = spawnSync(process.execPath, [FSPL_BIN, ...args], {
    input: opts.input ?? '',
    cwd: opts.cwd,
    env: { ...process.env, TZ: 'UTC', ...opts.env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}

function oneErrorLine(stderr: string) {
  expect(stderr).toMatch(/^Error: [^\n]+\n$/);
  expect(stderr).not.toMatch(/\bat .*\.js:\d+/);
}

describe('fspl CLI', () => {
  it('prints the version, help, and help for a subcommand', () => {
    expect(fspl(['-V']).stdout.toString()).toMatch(/^filespooler 1\.2\.2/);
    expect(fspl(['-V', 'queue-ls']).code).toBe(0);
    const help = fspl(['--help']);
    expect(help.code).toBe(0);
    for (const sub of ['gen-filename', 'queue-process', 'stdin-process', 'queue-get-next', 'show-license'])
      expect(help.stdout.toString()).toContain(sub);
    const sub = fspl(['queue-process', '--help']);
    expect(sub.code).toBe(0);
    for (const opt of [
      '--queuedir',
      '--decoder',
      '--maxjobs',
      '--never-delete',
      '--order-by',
      '--on-error',
      '--output-to',
      '--allow-job-params',
      '--ignore-payload',
      '--timeout',
    ])
      expect(sub.stdout.toString()).toContain(opt);
    expect(fspl(['help', 'queue-ls']).stdout.toString()).toContain('--queuedir');
  });

  it('with no subcommand prints help on stderr and exits 2', () => {
    const r = fspl([]);
    expect(r.code).toBe(2);
    expect(r.stdout.length).toBe(0);
    expect(r.stderr).toContain('queue-process');
  });

  it('exits 2 on usage errors', () => {
    const cases = [
      ['queue-ls', '--bogus', '-q', 'x'],
      ['queue-ls'],
      ['nosuch'],
      ['queue-info', '-q', 'q', '-j', 'abc'],
      ['queue-info', '-q', 'q', '-j', '18446744073709551616'],
      ['queue-process', '-q', 'q'],
      ['queue-process', '-q', 'q', '--on-error', 'sometimes', 'true'],
      ['queue-process', '-q', 'q', '-n', 'x', 'true'],
      ['queue-process', '-q', 'q', '--timeout', '1.5s', 'true'],
      ['queue-process', '-q', 'q', '--timeout', '-0.5', 'true'],
      ['stdin-process', '--timeout', '1e3', 'true'],
      ['prepare-set-next', '-s', 'sf'],
      ['-l', 'loud', 'gen-uuid'],
      ['queue-ls', '-q', 'q', 'extra'],
      ['queue-init', '-q', 'q', '--append-only=x'], // a flag takes no value, as in the reference
    ];
    for (const args of cases) {
      const r = fspl(args);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 2]);
      expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
    }
  });

  it('accepts enum values in any case and log levels by name or number', () => {
    const d = tempDir();
    expect(fspl(['queue-init', '-q', 'q'], { cwd: d }).code).toBe(0);
    for (const v of ['RETRY', 'delete', 'Leave'])
      expect(fspl(['queue-process', '-q', 'q', '--on-error', v, 'true'], { cwd: d }).code).toBe(0);
    expect(
      fspl(['queue-process', '-q', 'q', '--order-by', 'TimeStamp', '--output-to', 'savebOTH', 'true'], { cwd: d }).code,
    ).toBe(0);
    expect(fspl(['-l', 'DEBUG', 'gen-uuid']).code).toBe(0);
    expect(fspl(['-l', '5', 'gen-uuid']).code).toBe(0);
  });

  it('exits 1 with one Error line on runtime errors', () => {
    const d = tempDir();
    for (const args of [
      ['queue-ls', '-q', 'missing'],
      ['queue-process', '-q', 'missing', 'true'],
      ['queue-get-next', '-q', 'missing'],
      ['queue-write', '-q', 'missing'],
      ['prepare', '-s', '-', '-i', 'no-such-file'],
      ['prepare', '-s', '-', '-i', '.'],
    ]) {
      const r = fspl(args, { cwd: d });
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 1]);
      oneErrorLine(r.stderr);
    }
    expect(fspl(['queue-init', '-q', 'q'], { cwd: d }).code).toBe(0);
    const again = fspl(['queue-init', '-q', 'q'], { cwd: d });
    expect(again.code).toBe(1);
    oneErrorLine(again.stderr);
    const nf = fspl(['queue-info', '-q', 'q', '-j', '5'], { cwd: d });
    expect(nf.code).toBe(1);
    oneErrorLine(nf.stderr);
    for (const v of [
      'bad-tag',
      'bad-version',
      'bad-prefix-crc',
      'bad-meta-crc',
      'truncated-prefix',
      'truncated-meta',
      'empty',
    ]) {
      for (const sub of ['stdin-info', 'stdin-payload']) {
        const r = fspl([sub], { input: fs.readFileSync(path.join(VECTORS, `${v}.fspl`)) });
        expect(r.code).toBe(1);
        oneErrorLine(r.stderr);
      }
    }
  });

  it("says what is wrong, where it is: a seqfile's missing directory, input that is no packet", () => {
    const d = tempDir();
    const seq = fspl(['prepare', '-s', path.join(d, 'nonexist', 'seq')]);
    expect([seq.code, seq.stderr]).toEqual([
      1,
      `Error: Cannot create the sequence file ${path.join(d, 'nonexist', 'seq')}` +
        `: its directory ${path.join(d, 'nonexist')} does not exist\n`,
    ]);
    fs.writeFileSync(path.join(d, 'file'), '');
    const file = fspl(['prepare-get-next', '-s', path.join(d, 'file', 'seq')]);
    expect([file.code, file.stderr]).toEqual([
      1,
      `Error: Cannot create the sequence file ${path.join(d, 'file', 'seq')}: its ` +
        `directory ${path.join(d, 'file')} is not a directory (or one above it is not)\n`,
    ]);
    // As queue-status says of such a file: not a packet (not "failed to fill whole buffer").
    for (const sub of [['stdin-process', 'cat'], ['stdin-info'], ['stdin-payload']]) {
      expect(fspl(sub, { input: 'garbage\n' }), sub[0]).toMatchObject({
        code: 1,
        stderr: "Error: Input is not a filespooler packet: 8 bytes, fewer than a packet's header\n",
      });
      expect(fspl(sub, { input: '' }), sub[0]).toMatchObject({
        code: 1,
        stderr: 'Error: Empty input: there is no packet (did the command that makes it fail?)\n',
      });
    }
    const packet = fspl(['prepare', '-s', '-', '--', 'a', 'b']).stdout;
    for (const n of [20, 40]) {
      expect(fspl(['stdin-process', 'cat'], { input: packet.subarray(0, n) }).stderr).toBe(
        `Error: Input ends within the packet header, after ${n} bytes (cut short in transit?)\n`,
      );
    }
  });

  it('prepare -s: a reader gone mid-packet (EPIPE) spends the number: it may hold the packet in part', () => {
    const dir = tempDir();
    const sf = path.join(dir, 'seq');
    fs.writeFileSync(sf, '5\n');
    const big = path.join(dir, 'payload');
    fs.writeFileSync(big, Buffer.alloc(4 << 20, 0x61));
    const q = (s: string) => `'${s}'`;
    const r = spawnSync(
      'sh',
      [
        '-c',
        `${q(process.execPath)} ${q(FSPL_BIN)} prepare -s ${q(sf)} -i ${q(big)} -- true | head -c 100 > /dev/null`,
      ],
      {
        encoding: 'utf8',
      },
    );
    expect(r.stderr).toMatch(/Broken pipe/);
    // A plain packet cut short still reads as one (queue-write over a dropped ssh stores it):
    // giving 5 back would make two packets numbered 5.
    expect(fs.readFileSync(sf, 'utf8')).toBe('6\n');
  });

  it('takes --timeout in fractions of a second (an extension: the reference takes whole seconds)', () => {
    const d = tempDir();
    expect(fspl(['queue-init', '-q', 'q'], { cwd: d }).code).toBe(0);
    const packet = fspl(['prepare', '-s', 'seq'], { cwd: d }).stdout;
    expect(fspl(['queue-write', '-q', 'q'], { cwd: d, input: packet }).code).toBe(0);
    const started = Date.now();
    const r = fspl(['queue-process', '-q', 'q', '--timeout', '0.5', 'sleep', '--', '30'], { cwd: d });
    expect(r.code).toBe(1); // a timeout is a failure; the job stays (--on-error retry)
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(fspl(['queue-get-next', '-q', 'q'], { cwd: d }).stdout.toString()).toBe('1\n');
    const s = fspl(['stdin-process', '--timeout', '.25', 'sleep', '--', '30'], { input: packet });
    expect(s.code).toBe(1);
    const quick = fspl(['queue-process', '-q', 'q', '--timeout', '0.5', 'true'], { cwd: d });
    expect([quick.code, quick.stderr]).toEqual([0, '']);
    expect(fspl(['queue-get-next', '-q', 'q'], { cwd: d }).stdout.toString()).toBe('2\n');
  });

  it('runs the end-to-end flow: prepare | queue-write, queue-ls, queue-info, queue-process', () => {
    const d = tempDir();
    expect(fspl(['queue-init', '-q', 'q'], { cwd: d }).code).toBe(0);
    const pkt = fspl(['prepare', '-s', 'seq', '-i', '-', '--', 'a', 'b c'], {
      cwd: d,
      input: 'hello\n',
      env: { FSPL_SET_X: 'y' },
    });
    expect(pkt.code).toBe(0);
    expect(fspl(['queue-write', '-q', 'q'], { cwd: d, input: pkt.stdout }).code).toBe(0);
    expect(fs.readFileSync(path.join(d, 'seq'), 'utf8')).toBe('2\n');
    const ls = fspl(['queue-ls', '-q', 'q'], { cwd: d }).stdout.toString().split('\n');
    expect(ls[0]).toBe('ID                   creation timestamp          filename');
    expect(ls[1]).toMatch(/^1 {20}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 {3}fspl-[0-9a-f-]{36}\.fspl$/);
    const info = fspl(['queue-info', '-q', 'q', '-j', '1'], { cwd: d }).stdout.toString();
    expect(info).toMatch(/^FSPL_SEQ=1\nFSPL_CTIME_SECS=\d+\n/);
    expect(info).toContain('\nFSPL_JOB_QUEUEDIR=q\nFSPL_JOB_FULLPATH=q/jobs/fspl-');
    expect(info).toContain('\nFSPL_PARAM_1=a\nFSPL_PARAM_2=b c\nFSPL_SET_X=y\n');
    expect(fspl(['queue-payload', '-q', 'q', '-j', '1'], { cwd: d }).stdout.toString()).toBe('hello\n');
    expect(fspl(['stdin-payload'], { input: pkt.stdout }).stdout.toString()).toBe('hello\n');
    const run = fspl(
      [
        'queue-process',
        '-q',
        'q',
        '--allow-job-params',
        'sh',
        '--',
        '-c',
        'echo "$FSPL_SEQ:$1:$2:$FSPL_SET_X:$(cat)"',
        'sh',
      ],
      { cwd: d },
    );
    expect(run.stdout.toString()).toBe('1:a:b c:y:hello\n');
    expect(run.code).toBe(0);
    expect(fspl(['queue-get-next', '-q', 'q'], { cwd: d }).stdout.toString()).toBe('2\n');
    expect(fspl(['queue-set-next', '-q', 'q', '7'], { cwd: d }).code).toBe(0);
    expect(fs.readFileSync(path.join(d, 'q', 'nextseq'), 'utf8')).toBe('7\n');
    const sp = fspl(['stdin-process', 'cat'], { input: pkt.stdout });
    expect(sp.stdout.toString()).toBe('hello\n');
    const failing = fspl(['stdin-process', 'false'], { input: pkt.stdout });
    expect(failing.code).toBe(1);
    expect(failing.stderr).toMatch(/^Error: /m);
  });

  it('gen-uuid, gen-filename and show-license', () => {
    expect(fspl(['gen-uuid']).stdout.toString()).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$/,
    );
    expect(fspl(['gen-filename']).stdout.toString()).toMatch(/^fspl-[0-9a-f-]{36}\.fspl\n$/);
    expect(fspl(['show-license']).stdout.toString()).toContain('Permission is hereby granted');
  });
});
