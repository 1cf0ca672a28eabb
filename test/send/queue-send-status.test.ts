/**
 * `fspl queue-send --status` and the state file behind it (OUTBOX/sender.json): an outbox never
 * sent, one sent whole, one whose host fails, a sender running now (its pid alive and the lock
 * held), a lock held by another program, a stale state whose pid is alive but holds no lock, and
 * a missing outbox. The "ssh" here runs the receiver on this machine (`sh -c`), so no sshd is
 * needed: test/send/send-queue.test.ts is the one over a real ssh.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Queue } from 'filespooler';
import { afterEach, expect, test } from 'vitest';
import { makeHeader, packetBytes } from '../../src/packet/prepare.js';
import { describeIfPresent } from '../gate.js';
import { killTree, onPath, waitFor } from '../harness/proc.js';
import { FSPL_BIN, memTempDir } from '../helpers.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.pid !== undefined && c.exitCode === null) killTree(c.pid);
});

/** An outbox with packets 1..n, a remote queue, and an "ssh" that runs the remote command here. */
function setup(n: number): { outbox: string; remote: string; ssh: string } {
  const d = memTempDir();
  const outbox = path.join(d, 'outbox');
  const remote = path.join(d, 'remote');
  Queue.init(outbox);
  Queue.init(remote);
  const q = Queue.open(outbox);
  for (let i = 1; i <= n; i++)
    q.writeBuffer(
      packetBytes(
        makeHeader({ seq: BigInt(i), cmd: { kind: 'Command', params: [], env: [] } }),
        Buffer.from(`job ${i}\n`),
      ),
    );
  const ssh = path.join(d, 'ssh');
  fs.writeFileSync(ssh, '#!/bin/sh\nshift\nexec sh -c "$1"\n', { mode: 0o755 });
  return { outbox, remote, ssh };
}

function fspl(...args: string[]) {
  return spawnSync(process.execPath, [FSPL_BIN, ...args], { encoding: 'utf8' });
}

/** `--status --json`, parsed. */
function status(outbox: string) {
  const r = fspl('queue-send', '-q', outbox, '--status', '--json');
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout);
}

const missing = ['flock', 'sh'].filter((c) => !onPath(c)).map((c) => `${c} (apt-get install util-linux)`);

describeIfPresent('fspl queue-send --status', missing, { what: 'queue-send --status tests' }, () => {
  test('an outbox never sent: what waits, no sender, no state', () => {
    const { outbox } = setup(3);
    expect(status(outbox)).toEqual({
      outbox,
      waiting: { count: 3, lowest: '1', highest: '3' },
      next: '1',
      below: 0,
      sender: 'idle',
    });
    const text = fspl('queue-send', '-q', outbox, '--status');
    expect(text.stdout).toBe(
      `outbox ${outbox}: 3 packets wait (numbers 1 to 3), next 1\nsender: not running, and none ever ran here\n`,
    );
  });

  test('after a pass that sent everything: nothing waits, the last packet sent, the counts, no failure', () => {
    const { outbox, remote, ssh } = setup(5);
    const r = fspl('queue-send', '-q', outbox, '--to', `ssh:b:${remote}`, '--ssh', ssh);
    expect(r.status).toBe(0);
    const st = status(outbox);
    expect(st).toMatchObject({
      waiting: { count: 0 },
      next: '6',
      sender: 'idle',
      state: { to: `ssh:b:${remote}`, sent: 5, duplicates: 0, lastSent: { seq: '5' } },
    });
    expect(st.state.failing).toBeUndefined();
    expect(typeof st.state.lastSentAt).toBe('number');
    expect(fspl('queue-send', '-q', outbox, '--status').stdout).toMatch(
      /^last sent: packet 5 \(.+\) at .+; 5 sent by that run$/m,
    );
  });

  test('a pass whose host fails: since when and why, the packets still waiting', () => {
    const { outbox } = setup(2);
    const r = fspl('queue-send', '-q', outbox, '--to', 'ssh:b:/q', '--ssh', 'false');
    expect(r.status).toBe(1);
    const st = status(outbox);
    expect(st).toMatchObject({
      waiting: { count: 2, lowest: '1', highest: '2' },
      sender: 'idle',
      state: { sent: 0, failing: { attempts: 1 } },
    });
    expect(st.state.failing.error).toMatch(/false exited with status 1/);
    expect(fspl('queue-send', '-q', outbox, '--status').stdout).toMatch(
      /^failing since \S+ \(1 attempt\): false exited with status 1$/m,
    );
  });

  test(
    'a sender running now (--watch, its host failing): ' + 'running, its pid, failing; once it is gone, not running',
    async () => {
      const { outbox, ssh } = setup(2);
      const child = spawn(
        process.execPath,
        [FSPL_BIN, 'queue-send', '-q', outbox, '--to', 'ssh:b:/nonexistent/q', '--ssh', ssh, '--watch'],
        { stdio: 'ignore' },
      );
      children.push(child);
      const st = await waitFor('a failing sender', () => {
        const s = status(outbox);
        return s.state?.failing ? s : undefined;
      });
      expect(st).toMatchObject({ sender: 'running', state: { pid: child.pid, to: 'ssh:b:/nonexistent/q' } });
      expect(st.state.failing.error).toMatch(/no queue at \/nonexistent\/q/);
      expect(fspl('queue-send', '-q', outbox, '--status').stdout).toMatch(
        new RegExp(`^sender: running \\(pid ${child.pid}\\), sending to ssh:b:/nonexistent/q;`, 'm'),
      );
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      expect(status(outbox)).toMatchObject({ sender: 'idle', waiting: { count: 2 }, state: { pid: child.pid } });
    },
  );

  test(
    'the lock, not only the pid: a live pid that holds no lock ' +
      'is not a sender; a lock held by another program is said so',
    async () => {
      const { outbox } = setup(1);
      // A state left by a sender whose pid now belongs to a live process (this test's) that holds no lock.
      fs.writeFileSync(
        path.join(outbox, 'sender.json'),
        JSON.stringify({ to: 'ssh:b:/q', pid: process.pid, updatedAt: Date.now(), sent: 0, duplicates: 0 }),
      );
      expect(status(outbox).sender).toBe('idle');
      // The lock held by another program (here flock(1); queue-process holds it the same way), whose pid is not the
      // state's.
      fs.writeFileSync(
        path.join(outbox, 'sender.json'),
        JSON.stringify({ to: 'ssh:b:/q', pid: 2 ** 22 + 1, updatedAt: Date.now(), sent: 0, duplicates: 0 }),
      );
      const holder = spawn('flock', [path.join(outbox, 'nextseq.lock'), 'sleep', '30'], { stdio: 'ignore' });
      children.push(holder);
      await waitFor('the lock held', () => status(outbox).sender === 'locked' || undefined);
      expect(fspl('queue-send', '-q', outbox, '--status').stdout).toMatch(
        /^sender: none, but its nextseq\.lock is held by another program/m,
      );
      // And a sender can't start meanwhile, nor does its failure to start overwrite the state.
      const r = fspl('queue-send', '-q', outbox, '--to', 'ssh:b:/q', '--ssh', 'false');
      expect(r.stderr).toMatch(/in use by another program/);
      expect(status(outbox).state.pid).toBe(2 ** 22 + 1);
    },
  );

  test('one-line errors: a missing outbox, --status with sending options, no --to', () => {
    const d = memTempDir();
    const r = fspl('queue-send', '-q', path.join(d, 'nope'), '--status');
    expect(r.status).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/Cannot open queue .*nope.*No such file or directory/);
    const { outbox } = setup(1);
    const both = fspl('queue-send', '-q', outbox, '--status', '--to', 'ssh:b:/q');
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/--status takes no --to/);
    const none = fspl('queue-send', '-q', outbox);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/missing --to DEST/);
  });
});
