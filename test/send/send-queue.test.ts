/**
 * `fspl queue-send` against a real sshd on 127.0.0.1 (test/harness/sshd.ts): an outbox's packets
 * reach the remote queue in order, over one connection, each exactly once, through a connection
 * cut mid-stream, lost acknowledgements, the link going down and back (--watch), and a sender
 * killed with kill -9 and started again. Each outcome is said once, in order, plurals right.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Queue } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { makeHeader, packetBytes } from '../../src/packet/prepare.js';
import { describeIfPresent } from '../gate.js';
import { onPath, waitFor } from '../harness/proc.js';
import { SSHD_BIN, type Sshd, startSshd } from '../harness/sshd.js';
import { FSPL_BIN, memTempDir } from '../helpers.js';

/**
 * Packets of the long test (the 500 with FSPL_QUEUE_SEND_PACKETS=500; the receiver forks a few coreutils per
 * packet).
 */
const MANY = Number(process.env.FSPL_QUEUE_SEND_PACKETS ?? 120);

const missing = [SSHD_BIN, 'ssh', 'ssh-keygen', 'flock']
  .filter((c) => !onPath(c))
  .map((c) => `${c} (apt-get install openssh-server openssh-client util-linux)`);

/** An outbox (a local queue) and a remote queue (on "b", the same machine through sshd). */
function queues(): { outbox: string; remote: string } {
  // In memory: the receiver fsyncs each packet three times, which on a shared disk costs more
  // than everything these tests check (durability is test/powercut's).
  const d = memTempDir();
  const outbox = path.join(d, 'outbox');
  const remote = path.join(d, 'remote');
  Queue.init(outbox);
  Queue.init(remote);
  return { outbox, remote };
}

/** Packets numbered from..to into the outbox, each payload naming its number (and `size` bytes long). */
function put(outbox: string, from: number, to: number, size = 100): void {
  const q = Queue.open(outbox);
  for (let i = from; i <= to; i++) {
    const payload = Buffer.alloc(size, 'x');
    payload.write(`job ${i}\n`);
    q.writeBuffer(packetBytes(makeHeader({ seq: BigInt(i), cmd: { kind: 'Command', params: [], env: [] } }), payload));
  }
}

/** The remote queue's jobs by number: every number from 1 to n exactly once, whole, and nothing else. */
function expectExactlyOnce(remote: string, n: number, size = 100): void {
  const jobs = path.join(remote, 'jobs');
  const names = fs.readdirSync(jobs);
  expect(names.filter((f) => !f.startsWith('fspl-'))).toEqual([]);
  const seqs = names.map((f) => {
    const r = spawnSync(process.execPath, [FSPL_BIN, 'stdin-info', '--json'], {
      input: fs.readFileSync(path.join(jobs, f)),
      encoding: 'utf8',
    });
    return Number((JSON.parse(r.stdout) as { seq: string | number }).seq);
  });
  expect(seqs.sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  for (const f of names) expect(fs.statSync(path.join(jobs, f)).size).toBeGreaterThan(size);
}

describeIfPresent('fspl queue-send over ssh', missing, { what: 'queue-send tests' }, () => {
  let sshd: Sshd;
  let wrappers: string;
  beforeAll(async () => {
    sshd = await startSshd({ aliases: ['b'] });
    wrappers = fs.mkdtempSync(path.join(sshd.dir, 'bin-'));
  }, 60_000);
  afterAll(async () => {
    await sshd?.stop();
  });

  /** `--ssh` for the test's sshd; `pipeline` wraps the real ssh (to cut it, or lose its answers). */
  function sshOpt(pipeline?: (ssh: string) => string): string {
    const ssh = `ssh -F ${sshd.configPath} "$@"`;
    if (!pipeline) return `ssh -F ${sshd.configPath}`;
    const file = path.join(wrappers, `ssh-${Math.random().toString(36).slice(2)}.sh`);
    fs.writeFileSync(file, `#!/bin/sh\n${pipeline(ssh)}\n`, { mode: 0o755 });
    return file;
  }

  /** A pass; its summary from --json, or with `json: false` in words, the last line of stderr. */
  function send(outbox: string, remote: string, extra: string[] = [], ssh = sshOpt(), json = true) {
    const r = spawnSync(
      process.execPath,
      [
        FSPL_BIN,
        'queue-send',
        '-q',
        outbox,
        '--to',
        `ssh:b:${remote}`,
        '--ssh',
        ssh,
        ...(json ? ['--json'] : []),
        ...extra,
      ],
      { encoding: 'utf8', timeout: 25_000 },
    );
    return {
      status: r.status,
      stderr: r.stderr,
      summary: r.stdout ? (JSON.parse(r.stdout) as Record<string, unknown>) : undefined,
    };
  }

  const connections = () => (fs.readFileSync(sshd.logPath, 'utf8').match(/Accepted publickey/g) ?? []).length;

  test(`${MANY} packets: in order, over one connection, each once; the remote queue runs them in order`, () => {
    const { outbox, remote } = queues();
    put(outbox, 1, MANY);
    const before = connections();
    const r = send(outbox, remote);
    // The summary is on stdout (--json), and nothing else happened to be said.
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.summary).toMatchObject({
      sent: MANY,
      duplicates: 0,
      connections: 1,
      waiting: 0,
      next: String(MANY + 1),
      to: `ssh:b:${remote}`,
    });
    expect(connections() - before).toBe(1);
    expect(fs.readdirSync(path.join(outbox, 'jobs'))).toEqual([]);
    expectExactlyOnce(remote, MANY);
    const ran = spawnSync(
      process.execPath,
      [FSPL_BIN, 'queue-process', '-q', remote, 'sh', '--', '-c', 'echo $FSPL_SEQ >> "$0/../ran"', remote],
      {
        encoding: 'utf8',
      },
    );
    expect(ran.status).toBe(0);
    expect(
      fs
        .readFileSync(path.join(remote, '..', 'ran'), 'utf8')
        .trim()
        .split('\n')
        .map(Number),
    ).toEqual(Array.from({ length: MANY }, (_, i) => i + 1));
  }, 60_000);

  test('a connection cut mid-stream, then acknowledgements lost: each packet once in the remote queue', () => {
    const { outbox, remote } = queues();
    put(outbox, 1, 60, 5000);
    // The first connection is cut after 120000 bytes (about 23 packets; the next one half-way,
    // never a job); on the second the receiver stores everything sent but the sender hears only
    // its first 11 answers (ready and 10 acknowledgements); the third is good. One pass goes on while connections make
    // progress.
    const count = path.join(path.dirname(outbox), 'connections');
    const ssh = sshOpt(
      (real) => `n=$(cat ${count} 2>/dev/null || echo 0); echo $((n + 1)) > ${count}
case $n in
  0) head -c 120000 | ${real} ;;
  1) ${real} | { sed -u 11q; cat >/dev/null; } ;;
  *) exec ${real} ;;
esac`,
    );
    const r = send(outbox, remote, [], ssh, false);
    expect(r.status, r.stderr).toBe(0);
    // In the order it happened: each cut connection (retried at once: it made progress), the
    // host back before the next connection's packets, and the pass's result once, at the end.
    const lines = r.stderr.trimEnd().split('\n');
    expect(
      lines.map((l) => l.replace(/ssh:b:\S+ /, 'ssh:b:Q ').replace(/\(.*\); \d+ packets/, '(E); N packets')),
    ).toEqual([
      ' WARN fspl::send: Cannot deliver to ssh:b:Q (E); N packets wait, retrying',
      ' INFO fspl::send: ssh:b:Q is reachable again',
      ' WARN fspl::send: Cannot deliver to ssh:b:Q (E); N packets wait, retrying',
      ' INFO fspl::send: ssh:b:Q is reachable again',
      expect.stringMatching(
        /^fspl queue-send: sent 60 packets \(.*\) to ssh:b:Q over 3 connections; 0 packets wait, next 61$/,
      ),
    ]);
    // The packets stored on the second connection without an answer were sent again, and the
    // receiver, which had them, read them and dropped them.
    const dup =
      /sent 60 packets \((\d+) of them sent again and dropped by the receiver, which had (it|them) already\)/.exec(
        lines.at(-1)!,
      );
    expect(dup, lines.at(-1)).not.toBeNull();
    expect(Number(dup![1])).toBeGreaterThan(0);
    expectExactlyOnce(remote, 60, 5000);
  }, 60_000);

  test('kill -9 of the sender mid-send, started again: nothing lost or doubled', async () => {
    const { outbox, remote } = queues();
    put(outbox, 1, 60, 2000);
    const child = spawn(
      process.execPath,
      [FSPL_BIN, 'queue-send', '-q', outbox, '--to', `ssh:b:${remote}`, '--ssh', sshOpt()],
      { stdio: 'ignore' },
    );
    await waitFor(
      'some packets on the remote side',
      () => fs.readdirSync(path.join(remote, 'jobs')).length > 15,
      20_000,
      5,
    );
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const r = send(outbox, remote);
    expect(r.status).toBe(0);
    expect(r.summary!.waiting).toBe(0);
    expectExactlyOnce(remote, 60, 2000);
  }, 60_000);

  test('--watch: sends packets as they come; the link down (sshd stopped) and back, it resumes by itself', async () => {
    const { outbox, remote } = queues();
    const child: ChildProcess = spawn(
      process.execPath,
      [FSPL_BIN, 'queue-send', '-q', outbox, '--to', `ssh:b:${remote}`, '--ssh', sshOpt(), '--watch', '--json'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    let stdout = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    const remoteCount = () => fs.readdirSync(path.join(remote, 'jobs')).length;
    try {
      put(outbox, 1, 20);
      await waitFor('the first packets sent', () => remoteCount() === 20, 15_000);
      await sshd.kill();
      put(outbox, 21, 60);
      await waitFor('a failed delivery said', () => /Cannot deliver/.test(stderr), 15_000);
      // 40 new ones, and the 20th if its acknowledgement was lost with the link.
      expect(fs.readdirSync(path.join(outbox, 'jobs')).length).toBeGreaterThanOrEqual(40);
      await sshd.restart();
      await waitFor(
        'everything sent after the outage',
        () => remoteCount() === 60 && fs.readdirSync(path.join(outbox, 'jobs')).length === 0,
        20_000,
      );
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    expect(child.exitCode).toBe(0);
    expect(stderr).toMatch(/Cannot deliver to ssh:b:\S+ \(.*\); (1 packet waits|\d+ packets wait), retrying/);
    // In the order it happened: back, then what the connection that came back sent.
    const lines = stderr.trimEnd().split('\n');
    const down = lines.findIndex((l) => /Cannot deliver/.test(l));
    const back = lines.findIndex((l) => /ssh:b:\S+ is reachable again/.test(l));
    const sentAfter = lines.findIndex(
      (l, i) => i > down && /Sent \d+ packets?(?: \([^)]*\))? to ssh:b:\S+ over one connection/.test(l),
    );
    expect(
      [down, back, sentAfter].every((i) => i >= 0),
      stderr,
    ).toBe(true);
    expect(down < back && back < sentAfter, stderr).toBe(true);
    expect(lines[0]).toMatch(
      new RegExp(
        /^ INFO fspl::send: Sent (1 packet|\d+ packets) to ssh:b:\S+ /.source +
          /over one connection; (1 packet waits|\d+ packets wait)$/.source,
      ),
    );
    expect(JSON.parse(stdout)).toMatchObject({ sent: 60, waiting: 0 });
    expectExactlyOnce(remote, 60);
  }, 60_000);

  test('one line per outcome, plurals right: one packet sent; nothing to ' +
    'send; a pass that reached nobody says why, not "sent 0 packets"', () => {
    const { outbox, remote } = queues();
    put(outbox, 1, 1);
    const to = `ssh:b:${remote}`;
    expect(send(outbox, remote, [], sshOpt(), false)).toMatchObject({
      status: 0,
      stderr: `fspl queue-send: sent 1 packet to ${to} over 1 connection; 0 packets wait, next 2\n`,
    });
    expect(send(outbox, remote, [], sshOpt(), false)).toMatchObject({
      status: 0,
      stderr: `fspl queue-send: nothing sent to ${to}; 0 packets wait, next 2\n`,
    });
    put(outbox, 2, 2);
    const down = send(outbox, remote, [], 'false', false);
    expect(down).toMatchObject({
      status: 1,
      stderr: `fspl queue-send: cannot deliver to ${to}: false exited with status 1; 1 packet waits, next 2\n`,
    });
    const json = send(outbox, remote, [], 'false');
    expect([json.status, json.stderr]).toEqual([1, '']);
    expect(json.summary).toMatchObject({ sent: 0, waiting: 1, error: 'false exited with status 1' });
  }, 30_000);

  test('bad --to: one line, exit 2; the reference fspl as --remote-fspl: one line, exit 1, packets kept', () => {
    const { outbox, remote } = queues();
    for (const to of ['b:/q', 'ssh:b', 'ssh::/q', 'ssh:-oProxyCommand=x:/q', 'ftp:b:/q']) {
      const r = spawnSync(process.execPath, [FSPL_BIN, 'queue-send', '-q', outbox, '--to', to], { encoding: 'utf8' });
      expect(r.status, to).toBe(2);
      expect(r.stderr.trim().split('\n'), to).toHaveLength(1);
      expect(r.stderr, to).toMatch(/^error: --to /);
    }
    put(outbox, 1, 3);
    if (fs.existsSync('/usr/bin/fspl')) {
      const r = send(outbox, remote, ['--remote-fspl', '/usr/bin/fspl']);
      expect(r.status).toBe(1);
      expect(r.summary).toMatchObject({ sent: 0, waiting: 3 });
      expect(r.summary!.stopped, JSON.stringify(r.summary)).toMatch(
        /^fspl at \/usr\/bin\/fspl on b: does not check seals \(the reference fspl\? --remote-fspl/,
      );
    }
    // Our fspl there checks the seals, and takes them.
    const ours = path.join(wrappers, 'fspl');
    fs.writeFileSync(ours, `#!/bin/sh\nexec "${process.execPath}" "${FSPL_BIN}" "$@"\n`, { mode: 0o755 });
    const r = send(outbox, remote, ['--remote-fspl', ours]);
    expect(r.status).toBe(0);
    expectExactlyOnce(remote, 3);
  }, 30_000);
});
