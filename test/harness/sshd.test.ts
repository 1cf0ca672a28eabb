/**
 * Self-tests of the sshd harness: a real OpenSSH server on 127.0.0.1, reached with `ssh -F`.
 */

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { ROOT } from '../helpers.js';
import { listeningSockets, onPath } from './proc.js';
import { SSHD_BIN, type Sshd, startSshd } from './sshd.js';

const missing = [SSHD_BIN, 'ssh', 'ssh-keygen']
  .filter((c) => !onPath(c))
  .map((c) => `${c} (apt-get install openssh-server openssh-client)`);

describeIfPresent('sshd harness', missing, { what: 'sshd harness tests' }, () => {
  let sshd: Sshd;
  beforeAll(async () => {
    sshd = await startSshd({ aliases: ['b', 'c'], remotePath: [path.join(ROOT, 'bin')] });
  });
  afterAll(async () => {
    await sshd?.stop();
    if (sshd) expect(fs.existsSync(sshd.dir)).toBe(false);
  });

  const ssh = (remote: string, alias = 'b') => {
    const [cmd, ...args] = sshd.command(remote, alias);
    return execa(cmd, args, { reject: false, stdin: 'ignore', timeout: 15_000 });
  };

  test('runs a remote command as this user, with the given directories first on PATH, on every alias', async () => {
    const r = await ssh('id -un; echo "$HOME"; command -v fspl');
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n')).toEqual([sshd.user, sshd.remoteHome, path.join(ROOT, 'bin', 'fspl')]);
    const c = await ssh('echo "$SSH_CONNECTION"', 'c');
    expect(c.exitCode).toBe(0);
    expect(c.stdout).toMatch(new RegExp(`^127\\.0\\.0\\.1 \\d+ 127\\.0\\.0\\.1 ${sshd.port}$`));
    // The fspl under test runs there (its node is on the remote PATH too).
    const v = await ssh('fspl --version');
    expect(v.exitCode, v.stderr).toBe(0);
    expect(v.stdout).toMatch(/\d+\.\d+/);
  });

  test('the exit status of the remote command comes back', async () => {
    expect((await ssh('exit 7')).exitCode).toBe(7);
  });

  test('5 MB piped through `ssh b "cat > file"` arrive whole', async () => {
    const data = randomBytes(5 * 1024 * 1024);
    const file = path.join(sshd.dir, 'received.bin');
    const [cmd, ...args] = sshd.command(`cat > ${file}`);
    const r = await execa(cmd, args, { input: data, reject: false, timeout: 15_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(sha(fs.readFileSync(file))).toBe(sha(data));
  });

  test('nothing of it listens anywhere but 127.0.0.1', () => {
    const mine = listeningSockets(sshd.pid!);
    expect(mine).toEqual([{ proto: 'tcp', address: '127.0.0.1', port: sshd.port }]);
  });

  test('kill() takes the host down, sessions included; restart() brings it back on the same port', async () => {
    const [cmd, ...args] = sshd.command('sleep 60');
    const session = execa(cmd, args, { reject: false, stdin: 'ignore' });
    // The session is up once a `sleep 60` runs under the daemon.
    const { descendants, waitFor } = await import('./proc.js');
    const commandOf = (pid: number) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        return '';
      }
    };
    await waitFor('the remote sleep', () => descendants(sshd.pid!).some((p) => commandOf(p).startsWith('sleep\0')));
    const port = sshd.port;
    await sshd.kill();
    expect(sshd.pid).toBeUndefined();
    const cut = await session;
    expect(cut.exitCode).not.toBe(0); // the connection was cut, not closed by a finished command
    const down = await ssh('true');
    expect(down.exitCode).toBe(255);
    expect(down.stderr).toMatch(/refused/i);
    expect(fs.existsSync(sshd.configPath)).toBe(true);

    await sshd.restart();
    expect(sshd.port).toBe(port);
    const up = await ssh('echo back');
    expect(up.exitCode, up.stderr).toBe(0);
    expect(up.stdout).toBe('back');
  });
});
