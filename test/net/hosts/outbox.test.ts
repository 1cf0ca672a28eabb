/**
 * Delivery over ssh, packet by packet, against a real sshd (test/harness/sshd.ts): a packet sent
 * twice (its acknowledgement lost) is one token; a transfer cut half-way leaves no token and no
 * duplicate once sent again.
 */

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Net } from 'filespooler';
import { type OutgoingPacket, sendPackets } from 'filespooler/lowlevel';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../../gate.js';
import { onPath, waitFor } from '../../harness/proc.js';
import { SSHD_BIN, type Sshd, startSshd } from '../../harness/sshd.js';
import { FSPL_BIN, ROOT } from '../../helpers.js';
import { netDir, tokensIn } from '../helpers.js';

const missing = [SSHD_BIN, 'ssh', 'ssh-keygen', 'flock']
  .filter((c) => !onPath(c))
  .map((c) => `${c} (apt-get install openssh-server openssh-client util-linux)`);

/** A local queue with `n` tokens (payload sizes from `size`), as an outbox holds them. */
async function outboxWith(n: number, size: (i: number) => number): Promise<{ dir: string; packets: OutgoingPacket[] }> {
  const dir = netDir();
  const net = Net.define({ dir, places: { out: {} }, transitions: {} });
  net.init();
  for (let i = 0; i < n; i++) await net.put('out', Buffer.alloc(size(i), 65 + (i % 26)), { key: `k${i}` });
  const found = await tokensIn(path.join(dir, 'places/out'));
  return {
    dir,
    packets: found.map((t) => ({
      path: path.join(dir, 'places/out/jobs', t.filename),
      id: t.filename.slice(5, -5),
      seq: t.seq,
    })),
  };
}

function remotePlace(): string {
  const d = path.join(netDir(), 'place');
  fs.mkdirSync(path.join(d, 'jobs'), { recursive: true });
  return d;
}

describeIfPresent('delivery over ssh', missing, { what: 'ssh delivery tests' }, () => {
  let sshd: Sshd;
  let ssh: string[];
  beforeAll(async () => {
    sshd = await startSshd({ aliases: ['b'] });
    ssh = [...sshd.argv, 'b'];
  });
  afterAll(async () => {
    await sshd?.stop();
  });

  test('packets arrive under their own names, whole; sent again ' +
    '(lost acknowledgement) they are dropped, even once consumed', async () => {
    const { packets } = await outboxWith(5, (i) => 1000 * i);
    const remote = remotePlace();
    const first = await sendPackets(ssh, remote, packets);
    expect(first).toMatchObject({ acked: 5, duplicates: 0, remoteNext: 1n });
    expect(first.error).toBeUndefined();
    const names = fs.readdirSync(path.join(remote, 'jobs')).sort();
    expect(names).toEqual(packets.map((p) => `fspl-${p.id}.fspl`).sort());
    for (const p of packets)
      expect(fs.readFileSync(path.join(remote, 'jobs', `fspl-${p.id}.fspl`)).equals(fs.readFileSync(p.path))).toBe(
        true,
      );
    expect(fs.readFileSync(path.join(remote, 'recvseq'), 'utf8').trim()).toBe('6');
    // The place consumes the first two, then everything is sent again.
    for (const p of packets.slice(0, 2)) fs.rmSync(path.join(remote, 'jobs', `fspl-${p.id}.fspl`));
    const again = await sendPackets(ssh, remote, packets);
    expect(again).toMatchObject({ acked: 5, duplicates: 5, remoteNext: 6n });
    expect(fs.readdirSync(path.join(remote, 'jobs')).sort()).toEqual(
      packets
        .slice(2)
        .map((p) => `fspl-${p.id}.fspl`)
        .sort(),
    );
    // And the next new one is accepted.
    const { packets: more } = await outboxWith(7, () => 10);
    const r = await sendPackets(ssh, remote, [more[5]!, more[6]!]);
    expect(r).toMatchObject({ acked: 2, duplicates: 0 });
  }, 60_000);

  test('a transfer cut half-way (ssh client killed mid-packet) ' +
    'leaves no token; sent again, one whole token', async () => {
    const { packets } = await outboxWith(3, (i) => (i === 1 ? 48 * 1024 * 1024 : 100));
    const remote = remotePlace();
    const jobs = path.join(remote, 'jobs');
    const seen = new Set<string>();
    let cut = false;
    const r = await sendPackets(ssh, remote, packets, {
      onSpawn: (child) => {
        void waitFor(
          'a partial packet on the remote side',
          () => {
            for (const n of fs.readdirSync(jobs)) {
              seen.add(n);
              if (n.startsWith('.fspl-in-') && fs.statSync(path.join(jobs, n)).size > 1024 * 1024) return n;
            }
            return undefined;
          },
          30_000,
          5,
        ).then(() => {
          cut = true;
          child.kill('SIGKILL');
        });
      },
    });
    expect(cut).toBe(true);
    // The first packet is stored before the cut; its acknowledgement may still be on its way back
    // through ssh when the client is killed (a loaded machine): then the sender counts none, and
    // the resend below finds it a duplicate all the same.
    expect(r.acked).toBeLessThanOrEqual(1);
    expect(r.error).toMatch(/killed by SIGKILL/);
    // Only the first packet is a job; the cut one never had its final name.
    await waitFor(
      'the remote side to give up',
      () => !fs.readdirSync(jobs).some((n) => n.startsWith('.fspl-in-')) || fs.readdirSync(jobs),
      10_000,
    );
    expect(fs.readdirSync(jobs).filter((n) => n.startsWith('fspl-'))).toEqual([`fspl-${packets[0]!.id}.fspl`]);
    // Sent again from the start (the sender doesn't know what arrived): one of each, whole.
    const again = await sendPackets(ssh, remote, packets);
    expect(again).toMatchObject({ acked: 3, duplicates: 1 });
    const found = await tokensIn(remote);
    expect(found.map((t) => t.seq)).toEqual([1n, 2n, 3n]);
    expect(found[1]!.payload.length).toBe(48 * 1024 * 1024);
    expect(fs.readdirSync(jobs).filter((n) => !n.startsWith('fspl-'))).toEqual([]);
    expect([...seen].every((n) => n.startsWith('fspl-') || n.startsWith('.fspl-in-'))).toBe(true);
  }, 120_000);

  test('a sealed packet damaged on the way (same length) is refused ' +
    'where the remote host has our fspl; whole, it is taken', async () => {
    const dir = netDir();
    const good = path.join(dir, 'fspl-00000000-0000-4000-8000-000000000001.fspl');
    const payload = path.join(dir, 'payload');
    fs.writeFileSync(payload, Buffer.alloc(100_000, 7));
    const made = spawnSync('sh', ['-c', `node ${FSPL_BIN} prepare --seal -s - -i ${payload} > ${good}`]);
    expect(made.status, String(made.stderr)).toBe(0);
    const bad = path.join(dir, 'fspl-00000000-0000-4000-8000-000000000002.fspl');
    const bytes = fs.readFileSync(good);
    bytes[bytes.length - 10] ^= 1;
    fs.writeFileSync(bad, bytes);
    const remote = remotePlace();
    const fspl = path.join(ROOT, 'bin', 'fspl');
    const refused = await sendPackets(
      ssh,
      remote,
      [{ path: bad, id: '00000000-0000-4000-8000-000000000002', seq: 1n }],
      { fspl },
    );
    expect(refused.acked).toBe(0);
    expect(refused.error).toMatch(/cut short or damaged/);
    expect(fs.readdirSync(path.join(remote, 'jobs'))).toEqual([]);
    const taken = await sendPackets(
      ssh,
      remote,
      [{ path: good, id: '00000000-0000-4000-8000-000000000001', seq: 1n }],
      { fspl },
    );
    expect(taken).toMatchObject({ acked: 1, duplicates: 0 });
    expect(fs.readdirSync(path.join(remote, 'jobs'))).toEqual(['fspl-00000000-0000-4000-8000-000000000001.fspl']);
  }, 60_000);

  /** A sealed packet file, and a copy with one payload byte flipped (same length). */
  function sealedPair(): { good: OutgoingPacket; bad: OutgoingPacket } {
    const dir = netDir();
    const ids = ['00000000-0000-4000-8000-000000000011', '00000000-0000-4000-8000-000000000012'];
    const good = path.join(dir, `fspl-${ids[0]}.fspl`);
    const payload = path.join(dir, 'payload');
    fs.writeFileSync(payload, Buffer.alloc(1000, 7));
    const made = spawnSync('sh', ['-c', `node ${FSPL_BIN} prepare --seal -s - -i ${payload} > ${good}`]);
    expect(made.status, String(made.stderr)).toBe(0);
    const bytes = fs.readFileSync(good);
    bytes[bytes.length - 10] ^= 1;
    const bad = path.join(dir, `fspl-${ids[1]}.fspl`);
    fs.writeFileSync(bad, bytes);
    return { good: { path: good, id: ids[0]!, seq: 1n }, bad: { path: bad, id: ids[1]!, seq: 1n } };
  }

  /** An executable script in a fresh directory. */
  function script(text: string): string {
    const p = path.join(netDir(), 'fspl');
    fs.writeFileSync(p, text, { mode: 0o755 });
    return p;
  }

  test('fspl: naming nothing on the host: a damaged packet is ' +
    'refused, "fspl at PATH on HOST: not found", never committed', async () => {
    const { bad } = sealedPair();
    const remote = remotePlace();
    const r = await sendPackets(ssh, remote, [bad], { fspl: '/opt/typo/fspl', host: 'b' });
    expect(r.acked).toBe(0);
    expect(r.verifier).toEqual({ kind: 'not-found' });
    expect(r.error).toBe('fspl at /opt/typo/fspl on b: not found');
    expect(fs.readdirSync(path.join(remote, 'jobs'))).toEqual([]);
    expect(fs.existsSync(path.join(remote, 'recvseq'))).toBe(false);
  }, 30_000);

  test('fspl: a program that cannot run (its interpreter is not ' +
    'on the session\'s PATH): refused as such, not as "damaged"', async () => {
    const { good } = sealedPair();
    const remote = remotePlace();
    // As `#!/usr/bin/env node` does when node is not on the PATH of a non-interactive ssh session.
    const fspl = script('#!/usr/bin/env fspl-test-no-such-node\n');
    const r = await sendPackets(ssh, remote, [good], { fspl, host: 'b' });
    expect(r.acked).toBe(0);
    expect(r.verifier).toMatchObject({ kind: 'cannot-run' });
    expect(r.error).toMatch(
      new RegExp(`^fspl at ${fspl} on b: cannot run: .*fspl-test-no-such-node.*No such file or directory`),
    );
    expect(r.error).not.toMatch(/damaged/);
    expect(fs.readdirSync(path.join(remote, 'jobs'))).toEqual([]);
  }, 30_000);

  test('fspl: a program that takes any packet (it does not check ' +
    'seals): a damaged packet is refused, never committed', async () => {
    const { bad } = sealedPair();
    const remote = remotePlace();
    const fspl = script('#!/bin/sh\ncat >/dev/null\n');
    const r = await sendPackets(ssh, remote, [bad], { fspl, host: 'b' });
    expect(r.acked).toBe(0);
    expect(r.verifier).toEqual({ kind: 'no-seal-check' });
    expect(r.error).toMatch(new RegExp(`^fspl at ${fspl} on b: does not check seals`));
    expect(fs.readdirSync(path.join(remote, 'jobs'))).toEqual([]);
  }, 30_000);

  test('fspl: a verifier that works for the probe and then ' +
    'stops: refused as "cannot run", the packet not committed', async () => {
    const { good } = sealedPair();
    const remote = remotePlace();
    // Passes the probes (the first two runs), then fails the way a missing interpreter does.
    const count = path.join(netDir(), 'runs');
    const fspl = script(
      `#!/bin/sh\nn=$(cat ${count} 2>/dev/null || echo 0); echo $((n + 1)) > ${count}\n` +
        `if [ "$n" -ge 2 ]; then echo "gone now" >&2; exit 127; fi\nexec node ${FSPL_BIN} "$@"\n`,
    );
    const r = await sendPackets(ssh, remote, [good], { fspl, host: 'b' });
    expect(r.acked).toBe(0);
    expect(r.verifier).toEqual({ kind: 'cannot-run', detail: 'gone now' });
    expect(r.error).not.toMatch(/damaged/);
    expect(fs.readdirSync(path.join(remote, 'jobs'))).toEqual([]);
  }, 30_000);

  test('a probe (no packets): ok where the queue and the verifier are there; the reason where not', async () => {
    const remote = remotePlace();
    const fspl = path.join(ROOT, 'bin', 'fspl');
    expect(await sendPackets(ssh, remote, [], { fspl })).toEqual({ acked: 0, duplicates: 0, remoteNext: 1n });
    expect((await sendPackets(ssh, remote, [], { fspl: '/opt/typo/fspl', host: 'b' })).error).toBe(
      'fspl at /opt/typo/fspl on b: not found',
    );
    expect((await sendPackets(ssh, path.join(netDir(), 'nothing'), [])).error).toMatch(/no queue at/);
  }, 30_000);

  test('a receiver with no queue there says so', async () => {
    const { packets } = await outboxWith(1, () => 1);
    const r = await sendPackets(ssh, path.join(netDir(), 'nothing'), packets);
    expect(r.acked).toBe(0);
    expect(r.error).toMatch(/no queue at/);
  }, 30_000);
});
