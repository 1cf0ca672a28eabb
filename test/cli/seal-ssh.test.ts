/**
 * Sealed packets over a real ssh connection (Debian's sshd on 127.0.0.1): a transfer cut
 * mid-way leaves no job when the packet is sealed, and a truncated one (as the reference does)
 * when it is not.
 */
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { SSHD_BIN, type Sshd, startSshd } from '../harness/sshd.js';
import { FSPL_BIN, ROOT, tempDir } from '../helpers.js';

const missing = [SSHD_BIN, '/usr/bin/ssh', '/usr/bin/ssh-keygen'].filter((p) => !fs.existsSync(p));

/** Forwards stdin to stdout at about 20 MB/s, so that a cut lands mid-transfer on any machine. */
const THROTTLE = `
let budget = 0;
const t0 = Date.now();
process.stdin.on('data', (c) => {
  process.stdout.write(c);
  budget += c.length;
  const ahead = budget / 20e6 - (Date.now() - t0) / 1000;
  if (ahead > 0) { process.stdin.pause(); setTimeout(() => process.stdin.resume(), ahead * 1000); }
});
`;

/**
 * `CMD | throttle | ssh b 'fspl queue-write -q QUEUE'`, cut after cutAfterBytes: either the ssh
 * client is killed (the connection drops), or the sending side is (ssh then passes on a clean
 * end-of-file: what a sender that dies mid-payload looks like to the remote queue-write).
 */
function sendCut(
  sshd: Sshd,
  dir: string,
  args: string,
  queue: string,
  cutAfterBytes: number,
  kill: 'client' | 'sender',
): Promise<void> {
  const throttle = path.join(dir, 'throttle.cjs');
  fs.writeFileSync(throttle, THROTTLE);
  return new Promise((resolve) => {
    const sender = spawn('sh', ['-c', `${args} | node ${throttle}`], { stdio: ['ignore', 'pipe', 'ignore'] });
    const [ssh, ...sshArgs] = sshd.argv;
    const client = spawn(ssh!, [...sshArgs, 'b', `fspl queue-write -q ${queue}`], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    sender.stdout.pipe(client.stdin);
    client.stdin.on('error', () => {});
    // Cut once cutAfterBytes have gone through: mid-transfer, whatever the machine's speed.
    let sent = 0;
    let cut = false;
    sender.stdout.on('data', (c: Buffer) => {
      sent += c.length;
      if (cut || sent < cutAfterBytes) return;
      cut = true;
      if (kill === 'client') client.kill('SIGKILL');
      else {
        sender.stdout.unpipe(client.stdin);
        sender.stdout.destroy();
        client.stdin.end();
      }
    });
    client.on('exit', () => {
      sender.kill('SIGKILL');
      // Give the remote side a moment to see end-of-file and finish (or refuse).
      setTimeout(resolve, 1500);
    });
  });
}

function md5(p: string): string {
  return crypto.createHash('md5').update(fs.readFileSync(p)).digest('hex');
}

describeIfPresent(
  'sealed packets over ssh',
  missing,
  { what: 'sealed ssh tests', note: 'apt-get install openssh-server openssh-client' },
  () => {
    let sshd: Sshd;
    beforeAll(async () => {
      sshd = await startSshd({ aliases: ['b'], remotePath: [path.join(ROOT, 'bin')] });
    }, 60_000);
    afterAll(async () => {
      await sshd?.stop();
    });

    test('a sealed 50 MB packet cut mid-transfer (connection dropped, or sender killed) leaves no job; a ' +
      'resend is processed once with the right digest; unsealed, a cut sender commits a truncated job', async () => {
      const dir = tempDir();
      const big = path.join(dir, 'big');
      fs.writeFileSync(big, crypto.randomBytes(50 * 1024 * 1024));
      const q = path.join(dir, 'q');
      spawnSync('node', [FSPL_BIN, 'queue-init', '-q', q]);
      // The packet is prepared once (one sequence number) and sent, then sent again after the cut.
      const packet = path.join(dir, 'packet');
      expect(
        spawnSync('sh', ['-c', `node ${FSPL_BIN} prepare --seal -s ${dir}/state -i ${big} > ${packet}`]).status,
      ).toBe(0);
      for (const kill of ['client', 'sender'] as const) {
        await sendCut(sshd, dir, `cat ${packet}`, q, 10 << 20, kill);
        // no job, no temporary file
        expect(fs.readdirSync(path.join(q, 'jobs')), `cut by killing the ${kill}`).toEqual([]);
      }
      // The resend: whole, processed once.
      const [ssh, ...sshArgs] = sshd.argv;
      const ok = spawnSync('sh', ['-c', `${ssh} ${sshArgs.join(' ')} b "fspl queue-write -q ${q}" < ${packet}`]);
      expect(ok.status, String(ok.stderr)).toBe(0);
      const out = path.join(dir, 'out');
      const ran = spawnSync('node', [FSPL_BIN, 'queue-process', '-q', q, 'sh', '--', '-c', `cat >> ${out}`]);
      expect(ran.status, String(ran.stderr)).toBe(0);
      expect(md5(out)).toBe(md5(big));
      expect(fs.readdirSync(path.join(q, 'jobs'))).toEqual([]);
      // Unsealed: today's behaviour (and the reference's): a packet whose sender dies part-way is
      // committed, truncated.
      const q2 = path.join(dir, 'q2');
      spawnSync('node', [FSPL_BIN, 'queue-init', '-q', q2]);
      const plain = path.join(dir, 'plain');
      expect(spawnSync('sh', ['-c', `node ${FSPL_BIN} prepare -s ${dir}/state2 -i ${big} > ${plain}`]).status).toBe(0);
      await sendCut(sshd, dir, `cat ${plain}`, q2, 10 << 20, 'sender');
      const jobs = fs.readdirSync(path.join(q2, 'jobs')).filter((n) => n.startsWith('fspl-'));
      expect(jobs).toHaveLength(1);
      const size = fs.statSync(path.join(q2, 'jobs', jobs[0]!)).size;
      expect(size).toBeGreaterThan(0);
      expect(size).toBeLessThan(50 * 1024 * 1024);
    }, 120_000);
  },
);
