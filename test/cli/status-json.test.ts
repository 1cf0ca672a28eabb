import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bytesFromJson, type JsonBytes } from '../../src/json.js';
import { encodeHeader, makeHeader, Queue } from '../../src/lowlevel.js';
import { FSPL_BIN, tempDir } from '../helpers.js';

function fspl(args: string[], opts: { input?: Buffer | string; cwd?: string } = {}) {
  const r = spawnSync(process.execPath, [FSPL_BIN, ...args], {
    input: opts.input ?? '',
    cwd: opts.cwd,
    env: { ...process.env, TZ: 'UTC' },
  });
  return { code: r.status, stdout: r.stdout.toString(), raw: r.stdout, stderr: r.stderr.toString() };
}

function packet(seq: bigint, params: Buffer[] = [], env: Array<[Buffer, Buffer]> = []): Buffer {
  const h = makeHeader({ seq, ctime: { secs: 1893553445n + seq, nanos: 7 }, cmd: { kind: 'Command', params, env } });
  return Buffer.concat([encodeHeader(h), Buffer.from('payload')]);
}

/** A queue in a fresh directory; returns the directory (cwd for fspl) and the queue. */
function setup(seqs: bigint[], next?: bigint): { d: string; q: Queue } {
  const d = tempDir();
  const q = Queue.init(path.join(d, 'q'));
  for (const s of seqs) q.writeBuffer(packet(s, [Buffer.from('p')], [[Buffer.from('K'), Buffer.from([0xff, 0x00])]]));
  if (next !== undefined) q.setNext(next);
  return { d, q };
}

/** The `key: value` lines of the text output, as a map. */
function keys(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n\n')[0]!.split('\n')) {
    const m = /^([a-z ]+): +(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

describe('fspl queue-status', () => {
  it('exits 0 for a queue that can make progress, with aligned key: value lines', () => {
    const { d } = setup([1n, 2n, 4n]);
    const r = fspl(['queue-status', '-q', 'q'], { cwd: d });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const lines = r.stdout.split('\n\n')[0]!.split('\n').filter(Boolean);
    const col = lines[0]!.search(/(?<=: +)\S/);
    for (const l of lines) expect(l.search(/(?<=^[a-z ]+: +)\S/)).toBe(col);
    const k = keys(r.stdout);
    expect(k.queue).toBe('q');
    expect(k.state).toBe('ready: 2 jobs can run now');
    expect(k.nextseq).toBe('1');
    expect(k.lock).toBe('free');
    expect(k.waiting).toBe('3 jobs: 1-2, 4');
    expect(k.runnable).toBe('2');
    expect(k.oldest).toMatch(/^1, created 2030-01-02T03:04:06\+00:00 \(/);
    expect(r.stdout).toContain('\nlater gap: job 3 is missing; present beyond it: 4\n');
    // An empty queue is idle: status 0 too.
    const idle = fspl(['queue-status', '-q', 'q'], { cwd: setup([]).d });
    expect(idle.code).toBe(0);
    expect(keys(idle.stdout).state).toBe('idle: no jobs waiting');
  });

  it('exits 3 when the next job is missing, naming what is present', () => {
    const { d } = setup([7n, 8n, 9n, 12n, 1n], 5n);
    const r = fspl(['queue-status', '-q', 'q'], { cwd: d });
    expect(r.code).toBe(3);
    const k = keys(r.stdout);
    expect(k.state).toBe('stuck: next job 5 is missing');
    expect(k['below next']).toBe('1 job: 1 (already processed or skipped)');
    expect(k.waiting).toBe('4 jobs: 7-9, 12');
    expect(r.stdout).toContain(
      '\nnext job 5 is missing; present: 7-9, 12\n' +
        '  the queue waits for jobs 5 to 6: send them again (the same packets, if the sender kept them);\n' +
        '  or, if they are lost for good, skip to job 7: fspl queue-set-next -q q 7\n',
    );
  });

  it('names the command that moves past a missing next job, ready to paste, and it does', () => {
    const { d } = setup([1n, 3n], 2n);
    fs.renameSync(path.join(d, 'q'), path.join(d, "my q's"));
    const r = fspl(['queue-status', '-q', "my q's"], { cwd: d });
    expect(r.code).toBe(3);
    const line = r.stdout.split('\n').find((l) => l.includes('skip to job'))!;
    expect(line).toBe(`  or, if it is lost for good, skip to job 3: fspl queue-set-next -q 'my q'\\''s' 3`);
    const command = line.slice(line.indexOf('fspl '));
    const run = spawnSync('sh', ['-c', command.replace(/^fspl /, `"${process.execPath}" "${FSPL_BIN}" `)], {
      cwd: d,
      encoding: 'utf8',
    });
    expect([run.status, run.stderr]).toEqual([0, '']);
    expect(fspl(['queue-status', '-q', "my q's"], { cwd: d }).code).toBe(0);
  });

  it('exits 3 on a duplicate, and explains files it can not read', () => {
    const { d, q } = setup([1n, 1n]);
    fs.writeFileSync(q.jobPath('fspl-gz.fspl'), spawnSync('gzip', ['-c'], { input: packet(2n) }).stdout);
    fs.writeFileSync(q.jobPath('tmp-fspl-x.fspl.tmp'), '');
    fs.writeFileSync(q.jobPath('README'), '');
    const r = fspl(['queue-status', '-q', 'q'], { cwd: d });
    expect(r.code).toBe(3);
    expect(keys(r.stdout).state).toMatch(/^stuck: duplicate sequence number 1/);
    expect(r.stdout).toMatch(/\nduplicate 1: fspl-\S+\.fspl, fspl-\S+\.fspl\n/);
    expect(r.stdout).toMatch(/\nunreadable fspl-gz\.fspl \(\d+ bytes\): gzip data: did you forget -d zcat\?\n/);
    expect(r.stdout).toMatch(/\ntemp file tmp-fspl-x\.fspl\.tmp \(0 bytes, modified \d+s ago\)/);
    expect(r.stdout).toContain('\nother file README: not a job');
    const k = keys(r.stdout);
    expect([k.duplicates, k.unreadable, k['temp files'], k['other files']]).toEqual(['1', '1', '1', '1']);
  });

  it('exits 1 with one Error line for a missing queue, and 2 on usage errors', () => {
    const d = tempDir();
    for (const extra of [[], ['--json']]) {
      const r = fspl(['queue-status', '-q', 'missing', ...extra], { cwd: d });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^Error: [^\n]+\n$/);
    }
    expect(fspl(['queue-status'], { cwd: d }).code).toBe(2);
    expect(fspl(['queue-status', '-q', 'q', '--json=x'], { cwd: d }).code).toBe(2);
    expect(fspl(['queue-ls', '-q', 'q', '--no-json'], { cwd: d }).code).toBe(2);
  });

  it(
    '--queues-in: every queue under the parent, in name order, one ' +
      'JSON line each (as -q alone gives it); exit 3 if any is stuck',
    () => {
      const d = tempDir();
      const parent = path.join(d, 'queues');
      fs.mkdirSync(parent);
      const ok = Queue.init(path.join(parent, 'a'));
      ok.writeBuffer(packet(1n));
      const stuck = Queue.init(path.join(parent, 'b'));
      stuck.writeBuffer(packet(2n));
      fs.mkdirSync(path.join(parent, 'not-a-queue'));
      const r = fspl(['queue-status', '--queues-in', parent, '--json']);
      expect(r.code).toBe(3);
      const lines = r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { queuedir: string; state: string; can_progress: boolean });
      expect(lines.map((l) => [path.basename(l.queuedir), l.state, l.can_progress])).toEqual([
        ['a', 'ready', true],
        ['b', 'stuck', false],
      ]);
      // Each line is what -q alone prints, but for the time of the check.
      const alone = JSON.parse(fspl(['queue-status', '-q', ok.dir, '--json']).stdout) as Record<string, unknown>;
      const timeless = (v: unknown) =>
        JSON.stringify({ ...(v as object), checked_at: null }).replace(/"age_seconds":-?[0-9.]+/g, '');
      expect(timeless(lines[0])).toBe(timeless(alone));
      stuck.writeBuffer(packet(1n));
      expect(fspl(['queue-status', '--queues-in', parent, '--json']).code).toBe(0);
      const text = fspl(['queue-status', '--queues-in', parent]);
      expect(text.stdout.match(/^queue: +.*$/gm)).toEqual([`queue:        ${ok.dir}`, `queue:        ${stuck.dir}`]);
      const both = fspl(['queue-status', '-q', ok.dir, '--queues-in', parent]);
      expect([both.code, both.stderr.split('\n')[0]]).toEqual([
        2,
        'error: give -q DIR or --queues-in PARENT, not both',
      ]);
    },
  );

  it('sees the queue lock held by another process (flock(1), as the reference takes it)', async () => {
    const { d, q } = setup([1n]);
    const holder = spawn('flock', ['-x', `${q.seqfilePath}.lock`, '-c', 'echo locked; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    try {
      await new Promise((resolve) => holder.stdout!.once('data', resolve));
      const r = fspl(['queue-status', '-q', 'q'], { cwd: d });
      expect(r.code).toBe(0); // a running queue-process is progress, not a problem
      expect(keys(r.stdout).lock).toMatch(/^held by another process/);
      expect(JSON.parse(fspl(['queue-status', '-q', 'q', '--json'], { cwd: d }).stdout).lock.state).toBe('held');
    } finally {
      process.kill(-holder.pid!, 'SIGKILL'); // the whole group: flock and the sleep holding the lock
    }
    await new Promise((resolve) => holder.once('close', resolve));
    expect(keys(fspl(['queue-status', '-q', 'q'], { cwd: d }).stdout).lock).toBe('free');
  });

  it('has help, and is listed in the main help', () => {
    const h = fspl(['queue-status', '--help']);
    expect(h.code).toBe(0);
    for (const o of ['--queuedir', '--decoder', '--json']) expect(h.stdout).toContain(o);
    expect(fspl(['--help']).stdout).toContain('queue-status');
    for (const sub of ['queue-ls', 'queue-info', 'stdin-info', 'queue-get-next'])
      expect(fspl([sub, '--help']).stdout).toContain('--json');
  });

  it('--json gives one document with the same facts', () => {
    const { d } = setup([7n, 8n, 1n], 5n);
    const text = fspl(['queue-status', '-q', 'q'], { cwd: d });
    const r = fspl(['queue-status', '-q', 'q', '--json'], { cwd: d });
    expect(r.code).toBe(3);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({
      queuedir: 'q',
      decoder: null,
      state: 'stuck',
      can_progress: false,
      problems: [{ code: 'next-missing', message: 'next job 5 is missing' }],
      nextseq: { state: 'present', value: '5', problem: null },
      lock: { path: 'q/nextseq.lock', state: 'free' },
      jobs: 3,
      waiting: { count: 2, seqs: [{ first: '7', last: '8' }] },
      runnable: 0,
      gap: { seq: '5', is_next: true, present_beyond: [{ first: '7', last: '8' }] },
      below_next: { count: 1, seqs: [{ first: '1', last: '1' }] },
      duplicates: [],
      oldest: { seq: '7', ctime: { secs: '1893553452', nanos: 7, rfc3339_utc: '2030-01-02T03:04:12Z' } },
      newest: { seq: '8' },
      undecodable: [],
      temp_files: [],
      output_files: [],
      other_files: [],
    });
    expect(keys(text.stdout).state).toBe(`stuck: ${j.problems[0].message}`);
    expect(keys(text.stdout).nextseq).toBe(j.nextseq.value);
  });
});

describe('--json', () => {
  it('queue-ls --json: one object per line, agreeing with the text listing', () => {
    const { d } = setup([3n, 1n, 2n]);
    const text = fspl(['queue-ls', '-q', 'q'], { cwd: d });
    const r = fspl(['queue-ls', '-q', 'q', '--json'], { cwd: d });
    expect(r.code).toBe(0);
    expect(r.stdout.endsWith('\n')).toBe(true);
    const objs = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    const rows = text.stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/ +/));
    expect(objs.map((o) => [o.seq, o.ctime.rfc3339_local, o.filename])).toEqual(rows);
    expect(objs[0]).toMatchObject({
      seq: '1',
      type: 'Command',
      params: ['p'],
      env: [{ name: 'K', value: { base64: '/wA=' } }],
    });
    // An empty queue gives no lines at all (no header).
    expect(fspl(['queue-ls', '-q', 'q', '--json'], { cwd: setup([]).d }).stdout).toBe('');
  });

  it('queue-ls --json handles 2,000 jobs as one stream of lines', () => {
    const d = tempDir();
    const q = Queue.init(path.join(d, 'q'));
    for (let s = 1n; s <= 2000n; s++) q.writeBuffer(packet(s));
    const r = fspl(['queue-ls', '-q', 'q', '--json'], { cwd: d });
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2000);
    expect(JSON.parse(lines[1999]!).seq).toBe('2000');
  });

  it('queue-info --json and stdin-info --json agree with the NAME=VALUE output', () => {
    const { d, q } = setup([1n]);
    const text = fspl(['queue-info', '-q', 'q', '-j', '1'], { cwd: d });
    const r = fspl(['queue-info', '-q', 'q', '-j', '1', '--json'], { cwd: d });
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    const filename = fs.readdirSync(q.jobsDir)[0];
    expect(j).toMatchObject({
      seq: '1',
      filename,
      queuedir: 'q',
      fullpath: `q/jobs/${filename}`,
      type: 'Command',
      params: ['p'],
    });
    const asText = (vars: Array<{ name: JsonBytes; value: JsonBytes }>) =>
      Buffer.concat(
        vars.flatMap((v) => [bytesFromJson(v.name), Buffer.from('='), bytesFromJson(v.value), Buffer.from('\n')]),
      );
    expect(asText(j.variables).equals(text.raw)).toBe(true);
    expect(j.variables.at(-1)).toEqual({ name: 'FSPL_SET_K', value: { base64: '/wA=' } });

    const pkt = packet(9n, [Buffer.from('a b')]);
    const si = fspl(['stdin-info', '--json'], { input: pkt });
    expect(si.code).toBe(0);
    const sj = JSON.parse(si.stdout);
    expect(sj).toMatchObject({ seq: '9', type: 'Command', params: ['a b'], ctime: { secs: '1893553454', nanos: 7 } });
    expect(sj).not.toHaveProperty('filename');
    const stext = fspl(['stdin-info'], { input: pkt }).raw;
    expect(asText(sj.variables).equals(stext)).toBe(true);
    // A bad packet is still one Error line, nothing on stdout.
    const bad = fspl(['stdin-info', '--json'], { input: 'junk' });
    expect([bad.code, bad.stdout]).toEqual([1, '']);
  });

  it('queue-get-next --json', () => {
    const { d } = setup([], 18446744073709551615n);
    const r = fspl(['queue-get-next', '-q', 'q', '--json'], { cwd: d });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ nextseq: '18446744073709551615' });
    expect(fspl(['queue-get-next', '-q', 'q'], { cwd: d }).stdout).toBe('18446744073709551615\n');
  });
});

describe('the reader', () => {
  it('takes --json on the commands that have it', async () => {
    const { parseCommandLine } = await import('../../src/cli/parse/command-line.js');
    for (const argv of [
      ['queue-status', '-q', 'q', '--json'],
      ['queue-status', '-q', 'q', '-d', 'zcat'],
      ['queue-ls', '--json', '-q', 'q'],
      ['queue-info', '-q', 'q', '-j', '1', '--json'],
      ['queue-get-next', '-q', 'q', '--json'],
      ['stdin-info', '--json'],
    ]) {
      const line = await parseCommandLine(argv);
      expect(line.kind === 'run' && line.invocation.command).toBe(argv[0]);
      expect(line.kind === 'run' && Boolean(line.invocation.args.json)).toBe(argv.includes('--json'));
    }
    // not an option there
    expect((await parseCommandLine(['queue-payload', '-q', 'q', '-j', '1', '--json'])).kind).toBe('usage');
  });
});
