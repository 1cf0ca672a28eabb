/**
 * Sealed packets through the CLI: a transfer cut mid-way or a corrupted payload is caught, never
 * run. The ssh case is played with a local pipe: a small relay forwards the first N bytes of the
 * packet and exits, as a killed ssh client would leave the remote queue-write.
 */
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FSPL_BIN, tempDir } from '../helpers.js';

const NODE = process.execPath;

function fspl(args: string[], opts: { input?: Buffer | string; env?: NodeJS.ProcessEnv; stdinFile?: string } = {}) {
  const stdin = opts.stdinFile ? fs.openSync(opts.stdinFile, 'r') : 'pipe';
  try {
    const r = spawnSync(NODE, [FSPL_BIN, ...args], {
      input: opts.stdinFile ? undefined : (opts.input ?? ''),
      stdio: [stdin, 'pipe', 'pipe'],
      env: { ...process.env, TZ: 'UTC', ...opts.env },
      maxBuffer: 1 << 30,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
  } finally {
    if (typeof stdin === 'number') fs.closeSync(stdin);
  }
}

/** Run a shell pipeline with `fspl` meaning our CLI. */
function sh(script: string, env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync('bash', ['-c', `fspl() { "${NODE}" "${FSPL_BIN}" "$@"; }\n${script}`], {
    env: { ...process.env, ...env },
    maxBuffer: 1 << 28,
  });
  return { code: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function setup() {
  const dir = tempDir();
  const q = path.join(dir, 'q');
  expect(fspl(['queue-init', '-q', q]).code).toBe(0);
  const payload = crypto.randomBytes(3 * 1024 * 1024 + 5);
  const file = path.join(dir, 'payload');
  fs.writeFileSync(file, payload);
  // The relay: forward the first N bytes of stdin, then exit without reading on.
  const relay = path.join(dir, 'relay.cjs');
  fs.writeFileSync(
    relay,
    `const fs=require('fs');let left=Number(process.argv[2]);const b=Buffer.alloc(65536);
while(left>0){const n=fs.readSync(0,b,0,Math.min(b.length,left),null);if(n===0)break;fs.writeSync(1,b,0,n);left-=n;}
process.exit(0);`,
  );
  const digest = crypto.createHash('sha256').update(payload).digest('hex');
  return { dir, q, file, payload, relay, digest, jobs: () => fs.readdirSync(path.join(q, 'jobs')) };
}

function jobFile(q: string): string {
  const names = fs.readdirSync(path.join(q, 'jobs')).filter((n) => n.endsWith('.fspl'));
  expect(names).toHaveLength(1);
  return path.join(q, 'jobs', names[0]!);
}

describe('a transfer cut mid-way', () => {
  it('sealed: queue-write refuses it and stores nothing; a resend is processed once with the right digest', () => {
    const s = setup();
    const cut = sh(
      `fspl prepare --seal -s "${s.dir}/seq" -i "${s.file}" | "` +
        `${NODE}" "${s.relay}" 1000000 | fspl queue-write -q "${s.q}"`,
    );
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/^Error: Payload ends early: \d+ of 3145733 bytes \(cut short in transit\?\)$/m);
    expect(s.jobs()).toEqual([]); // no job file, no temporary file
    // The same through a pipe into prepare (spooled), cut inside the payload.
    const cut2 = sh(
      `cat "${s.file}" | fspl prepare --seal -s "${s.dir}/seq" -i - ` +
        `| "${NODE}" "${s.relay}" 2000000 | fspl queue-write -q "${s.q}"`,
    );
    expect(cut2.code).toBe(1);
    expect(s.jobs()).toEqual([]);
    // Cut inside the header: refused too.
    expect(sh(`fspl prepare --seal -s - -i "${s.file}" | head -c 40 | fspl queue-write -q "${s.q}"`).stderr).toMatch(
      /Input ends within the packet header, after 40 bytes/,
    );
    expect(s.jobs()).toEqual([]);
    // The resend (it takes the next sequence number; the queue is told where to start).
    expect(sh(`fspl prepare --seal -s "${s.dir}/seq" -i "${s.file}" | fspl queue-write -q "${s.q}"`).code).toBe(0);
    expect(fspl(['queue-set-next', '-q', s.q, '3']).code).toBe(0);
    const out = path.join(s.dir, 'digests');
    const run = fspl(['queue-process', '-q', s.q, 'sh', '--', '-c', `sha256sum >> "${out}"`]);
    expect(run.code).toBe(0);
    expect(fs.readFileSync(out, 'utf8')).toBe(`${s.digest}  -\n`);
    expect(s.jobs()).toEqual([]);
  });

  it('unsealed (as the reference): the truncated job is committed and runs', () => {
    const s = setup();
    const cut = sh(`fspl prepare -s - -i "${s.file}" | "${NODE}" "${s.relay}" 1000000 | fspl queue-write -q "${s.q}"`);
    expect(cut.code).toBe(0);
    expect(fs.statSync(jobFile(s.q)).size).toBe(1000000);
  });

  it('queue-write refuses an empty stdin (what a failed prepare upstream gives)', () => {
    const s = setup();
    const r = sh(`fspl prepare -s "${s.dir}/nosuchdir/seq" | fspl queue-write -q "${s.q}"`);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Error: Empty input: there is no packet to write/m);
    expect(s.jobs()).toEqual([]);
  });
});

describe('a sealed job damaged on disk', () => {
  function damaged(how: 'flip' | 'cut') {
    const s = setup();
    expect(sh(`fspl prepare --seal -s - -i "${s.file}" | fspl queue-write -q "${s.q}"`).code).toBe(0);
    const job = jobFile(s.q);
    const bytes = fs.readFileSync(job);
    if (how === 'flip') {
      bytes[bytes.length - 12345] ^= 0x10;
      fs.writeFileSync(job, bytes);
    } else {
      fs.writeFileSync(job, bytes.subarray(0, bytes.length - 1000));
    }
    const marker = path.join(s.dir, 'ran');
    const command = ['sh', '--', '-c', `cat > /dev/null; echo ran >> "${marker}"`];
    return { ...s, job, marker, command, ran: () => fs.existsSync(marker) };
  }

  it('one byte flipped: queue-process --verify fails it without running it, and keeps it', () => {
    const d = damaged('flip');
    const r = fspl(['queue-process', '-q', d.q, '--verify', ...d.command]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Payload checksum mismatch/);
    expect(d.ran()).toBe(false);
    expect(fs.existsSync(d.job)).toBe(true);
    expect(fs.readFileSync(path.join(d.q, 'nextseq'), 'utf8').trim()).toBe('1');
    // --on-error leave: failed and kept, processing goes on.
    expect(fspl(['queue-process', '-q', d.q, '--verify', '--on-error', 'leave', ...d.command]).code).toBe(0);
    expect(fs.existsSync(d.job)).toBe(true);
  });

  it('one byte flipped: queue-payload fails; stdin-process on a pipe fails though the command succeeded', () => {
    const d = damaged('flip');
    const p = fspl(['queue-payload', '-q', d.q, '-j', '1']);
    expect(p.code).toBe(1);
    expect(p.stderr).toMatch(
      /^Error: Payload checksum mismatch: CRC-32 0x[0-9a-f]{8}, sealed as 0x[0-9a-f]{8} \(corrupted\?\)\n$/,
    );
    const r = sh(`cat "${d.job}" | fspl stdin-process ${d.command.map((a) => `'${a}'`).join(' ')}`);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/payload failed its seal: Payload checksum mismatch/);
    expect(d.ran()).toBe(true); // it ran, consumed the payload, and its success did not count
    expect(fspl(['stdin-payload'], { stdinFile: d.job }).code).toBe(1);
  });

  it('one byte flipped, through a decoder: the job fails after the command ran', () => {
    const d = damaged('flip');
    spawnSync('gzip', [d.job]);
    fs.renameSync(`${d.job}.gz`, d.job);
    const r = fspl(['queue-process', '-q', d.q, '-d', 'zcat', ...d.command]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/payload failed its seal: Payload checksum mismatch/);
    expect(d.ran()).toBe(true);
    expect(fs.existsSync(d.job)).toBe(true);
    expect(fspl(['queue-payload', '-q', d.q, '-d', 'zcat', '-j', '1']).code).toBe(1);
  });

  it('cut short: queue-process fails it without --verify and without running it; queue-status flags it', () => {
    const d = damaged('cut');
    const r = fspl(['queue-process', '-q', d.q, ...d.command]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Payload ends early: 3144733 of 3145733 bytes/);
    expect(d.ran()).toBe(false);
    expect(fs.existsSync(d.job)).toBe(true);
    const st = JSON.parse(fspl(['queue-status', '-q', d.q, '--json']).stdout.toString());
    expect(st.sealed).toBe(1);
    expect(st.damaged).toEqual([
      { seq: '1', filename: path.basename(d.job), payload_size: 3144733, sealed_size: '3145733' },
    ]);
    expect(fspl(['queue-status', '-q', d.q]).stdout.toString()).toMatch(/damaged job 1 .*queue-process will fail it/);
    // stdin-process from the file itself: its size is checked before running.
    const s = fspl(['stdin-process', ...d.command], { stdinFile: d.job });
    expect(s.code).toBe(1);
    expect(d.ran()).toBe(false);
  });
});

describe('sealed packets of every size verify', () => {
  it.each([0, 1, 65535, 65536, 65537])('%i bytes, from a file and from a pipe', (size) => {
    const dir = tempDir();
    const q = path.join(dir, 'q');
    fspl(['queue-init', '-q', q]);
    const file = path.join(dir, 'p');
    const payload = crypto.randomBytes(size);
    fs.writeFileSync(file, payload);
    expect(sh(`fspl prepare --seal -s "${dir}/seq" -i "${file}" | fspl queue-write -q "${q}"`).code).toBe(0);
    expect(sh(`cat "${file}" | FSPL_SEAL=1 fspl prepare -s "${dir}/seq" -i - | fspl queue-write -q "${q}"`).code).toBe(
      0,
    );
    const ls = fspl(['queue-ls', '-q', q, '--json'])
      .stdout.toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(ls.map((j) => [j.sealed, j.payload_len])).toEqual([
      [true, String(size)],
      [true, String(size)],
    ]);
    for (const j of ['1', '2']) expect(fspl(['queue-payload', '-q', q, '-j', j]).stdout.equals(payload)).toBe(true);
    expect(fspl(['queue-process', '-q', q, '--verify', 'cat']).stdout.equals(Buffer.concat([payload, payload]))).toBe(
      true,
    );
  });

  it('without --seal (and FSPL_SEAL unset or 0) a packet has no seal', () => {
    const r = fspl(['prepare', '-s', '-'], { env: { FSPL_SEAL: '0' } });
    expect(r.stdout[30]).toBe(0x83);
    expect(fspl(['prepare', '-s', '-'], { env: { FSPL_SEAL: '1' } }).stdout[30]).toBe(0x85);
  });
});

describe('prepare --seal on a pipe', () => {
  it('spools to a nameless file in $TMPDIR that is gone even when prepare is killed', async () => {
    const tmp = tempDir();
    const child = spawn(NODE, [FSPL_BIN, 'prepare', '--seal', '-s', '-', '-i', '-'], {
      env: { ...process.env, TMPDIR: tmp },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    child.stdout.resume();
    child.stdin.write(Buffer.alloc(1 << 20, 1));
    // Wait until the spool holds what was sent: one of its descriptors points into $TMPDIR.
    const spoolSize = () => {
      for (const fd of fs.readdirSync(`/proc/${child.pid}/fd`)) {
        let target = '';
        try {
          target = fs.readlinkSync(`/proc/${child.pid}/fd/${fd}`);
        } catch {
          continue;
        }
        if (target.startsWith(tmp)) return fs.statSync(`/proc/${child.pid}/fd/${fd}`).size;
      }
      return -1;
    };
    for (let i = 0; i < 500 && spoolSize() < 1 << 20; i++) await new Promise((r) => setTimeout(r, 20));
    expect(spoolSize()).toBe(1 << 20);
    expect(fs.readdirSync(tmp)).toEqual([]); // nameless from the start
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    expect(fs.readdirSync(tmp)).toEqual([]);
  });
});
