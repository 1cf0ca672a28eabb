/**
 * Self-tests of the Syncthing pair harness: two real instances in one loopback-only network
 * namespace, A send-only, B receive-only.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { listeningSockets, onPath } from './proc.js';
import { netnsSupport, SYNCTHING_BIN, type SyncthingPair, startSyncthingPair, waitForFile } from './syncthing.js';

function missing(): string[] {
  const out = [SYNCTHING_BIN, 'unshare', 'ip']
    .filter((c) => !onPath(c))
    .map((c) => `${c} (apt-get install syncthing iproute2 util-linux)`);
  if (out.length === 0 && netnsSupport().problem) out.push(netnsSupport().problem!);
  return out;
}

describeIfPresent('syncthing pair harness', missing(), { what: 'syncthing harness tests' }, () => {
  let pair: SyncthingPair;
  beforeAll(async () => {
    pair = await startSyncthingPair({ ignores: ['*.ignored'] });
  });
  afterAll(async () => {
    await pair?.stop();
    if (pair) {
      expect(fs.existsSync(pair.dir)).toBe(false);
      expect(fs.existsSync(`/proc/${pair.a.pid}`) || fs.existsSync(`/proc/${pair.b.pid}`)).toBe(false);
    }
  });

  test('a file written on A appears on B, whole', async () => {
    const data = randomBytes(256 * 1024);
    fs.writeFileSync(path.join(pair.a.folder, 'job.bin'), data);
    const got = await waitForFile(path.join(pair.b.folder, 'job.bin'), 15_000);
    expect(got.equals(data)).toBe(true);
  });

  test('nothing goes from B (receive-only) to A (send-only); ignored files stay put', async () => {
    fs.writeFileSync(path.join(pair.b.folder, 'from-b.txt'), 'b');
    fs.writeFileSync(path.join(pair.a.folder, 'x.ignored'), 'x');
    await pair.rescan('b');
    await pair.rescan('a');
    // A marker sent afterwards from A arrives once B has handled everything before it.
    fs.writeFileSync(path.join(pair.a.folder, 'marker'), 'm');
    await pair.rescan('a');
    await waitForFile(path.join(pair.b.folder, 'marker'));
    const status = await pair.api<{ receiveOnlyChangedFiles: number }>(
      'b',
      'GET',
      `/rest/db/status?folder=${pair.folderId}`,
    );
    expect(status.receiveOnlyChangedFiles).toBe(1); // B's file is a local change, kept to itself
    expect(fs.existsSync(path.join(pair.a.folder, 'from-b.txt'))).toBe(false);
    expect(fs.existsSync(path.join(pair.b.folder, 'x.ignored'))).toBe(false);
  });

  test('the instances are in their own network namespace with loopback only, and listen on 127.0.0.1 only', () => {
    const ours = fs.readlinkSync('/proc/self/ns/net');
    for (const inst of [pair.a, pair.b]) {
      expect(fs.readlinkSync(`/proc/${inst.pid}/ns/net`)).not.toBe(ours);
      const ifaces = fs
        .readFileSync(`/proc/${inst.pid}/net/dev`, 'utf8')
        .split('\n')
        .slice(2)
        .map((l) => l.split(':')[0].trim())
        .filter(Boolean);
      expect(ifaces).toEqual(['lo']);
      const sockets = listeningSockets(inst.pid);
      expect(sockets.length).toBeGreaterThan(0);
      for (const s of sockets) expect(s.address, JSON.stringify(s)).toBe('127.0.0.1');
    }
    expect(fs.readlinkSync(`/proc/${pair.a.pid}/ns/net`)).toBe(fs.readlinkSync(`/proc/${pair.b.pid}/ns/net`));
  });

  test(
    'discovery, relays, NAT traversal, usage and crash ' +
      'reporting and upgrades are off, as Syncthing itself reports',
    async () => {
      for (const side of ['a', 'b'] as const) {
        const { options } = await pair.api<{ options: Record<string, unknown> }>(side, 'GET', '/rest/config');
        expect(options).toMatchObject({
          globalAnnounceEnabled: false,
          localAnnounceEnabled: false,
          relaysEnabled: false,
          natEnabled: false,
          urAccepted: -1,
          crashReportingEnabled: false,
          autoUpgradeIntervalH: 0,
          listenAddresses: [side === 'a' ? 'tcp://127.0.0.1:22001' : 'tcp://127.0.0.1:22002'],
        });
      }
      const { devices } = await pair.api<{ devices: { deviceID: string; addresses: string[] }[] }>(
        'a',
        'GET',
        '/rest/config',
      );
      expect(devices.find((d) => d.deviceID === pair.b.deviceId)?.addresses).toEqual(['tcp://127.0.0.1:22002']);
    },
  );

  test('the logs are collected, with the trace facility on', () => {
    for (const inst of [pair.a, pair.b]) expect(fs.readFileSync(inst.logPath, 'utf8')).toMatch(/DEBUG: /);
  });
});
