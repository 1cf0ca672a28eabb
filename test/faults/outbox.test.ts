/**
 * The ssh outbox under faults, against a real sshd (test/harness/sshd.ts): a receiver whose disk
 * is full (a real tmpfs) or fails (the fault file system) refuses before its `ok`, and the sender
 * keeps the packet and tries again after its backoff; a sender whose own disk fails as it takes an
 * acknowledged packet off the outbox counts a failed attempt and tries again (the receiver says
 * `dup`). Once the fault is cleared everything arrives exactly once, in order, with nothing left on
 * either side, and the sender never stopped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Net } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { OutboxSender } from '../../src/net/hosts/outbox-sender.js';
import { describeIfPresent } from '../gate.js';
import { onPath, waitFor } from '../harness/proc.js';
import { SSHD_BIN, type Sshd, startSshd } from '../harness/sshd.js';
import { tokens } from '../net/fault-check.js';
import {
  type FaultRule,
  type FaultyFs,
  faultsMissing,
  mountFaulty,
  mountTmpfs,
  type SmallTmpfs,
  tmpfsMissing,
} from './harness.js';

const missing = [
  ...[SSHD_BIN, 'ssh', 'ssh-keygen', 'flock']
    .filter((c) => !onPath(c))
    .map((c) => `${c} (apt-get install openssh-server openssh-client util-linux)`),
  ...faultsMissing(),
  ...tmpfsMissing(),
];

let made = 0;

/** An outbox (a place's queue, as a net's commits make it) under `parent`, with `n` tokens. */
async function outboxWith(parent: string, n: number): Promise<string> {
  const dir = path.join(parent, `net${made++}`);
  fs.mkdirSync(dir);
  const net = Net.define({ dir, places: { out: {} }, transitions: {} });
  net.init();
  for (let i = 0; i < n; i++) await net.put('out', Buffer.alloc(3000 + i, 65 + i), { key: `k${i}` });
  return path.join(dir, 'places/out');
}

function remotePlace(parent: string): string {
  const d = path.join(parent, `place${made++}`);
  fs.mkdirSync(path.join(d, 'jobs'), { recursive: true });
  return d;
}

/** What a place holds, checked: keys k0..k(n-1) once each, numbers 1..n, nothing else in jobs/. */
async function expectExactlyOnce(place: string, n: number): Promise<void> {
  const got = await tokens(place);
  expect(got.map((t) => t.key).sort(), 'keys (lost or doubled)').toEqual(
    Array.from({ length: n }, (_, i) => `k${i}`).sort(),
  );
  expect(
    got.map((t) => t.seq).sort((a, b) => (a < b ? -1 : 1)),
    'numbers',
  ).toEqual(Array.from({ length: n }, (_, i) => BigInt(i + 1)));
  expect(
    fs.readdirSync(path.join(place, 'jobs')).filter((f) => !/^fspl-.*\.fspl$/.test(f)),
    'files left in jobs/',
  ).toEqual([]);
}

describeIfPresent(
  'the ssh outbox under faults',
  missing,
  { what: 'ssh outbox fault tests', note: 'run as root, apt-get install openssh-server fuse3 libfuse3-dev gcc' },
  () => {
    let sshd: Sshd;
    let ffs: FaultyFs;
    let disk: SmallTmpfs;
    beforeAll(async () => {
      sshd = await startSshd({ aliases: ['b'] });
      ffs = await mountFaulty();
      disk = mountTmpfs('1m');
    });
    afterAll(async () => {
      await sshd?.stop();
      await ffs?.unmount();
      disk?.unmount();
    });

    /** A sender for `outbox` into `place` on host b, running until stopped; its run must not fail. */
    function startSender(outbox: string, place: string) {
      const sender = new OutboxSender({
        place: 'out',
        outbox,
        remote: { host: 'b', dir: place, sync: false },
        host: { kind: 'ssh', name: 'b', ssh: [...sshd.argv, 'b'] },
        pollInterval: 100,
      });
      const stop = new AbortController();
      let failure: unknown;
      const running = sender.run(stop.signal).catch((err: unknown) => {
        failure = err;
      });
      return {
        sender,
        failure: () => failure,
        async until(what: string, check: () => boolean, ms = 30_000) {
          await waitFor(what, () => failure !== undefined || check(), ms, 50);
          expect(failure, `the sender stopped with an error`).toBeUndefined();
        },
        async stop() {
          stop.abort();
          await running;
          expect(failure, `the sender stopped with an error`).toBeUndefined();
        },
      };
    }

    const outboxEmpty = (outbox: string) =>
      fs.readdirSync(path.join(outbox, 'jobs')).filter((f) => f.startsWith('fspl-')).length === 0;

    test("the receiver's disk full (a real tmpfs): it refuses, the sender keeps " +
      'the packets and tries again, and delivers each once when there is room', async () => {
      const outbox = await outboxWith(ffs.root, 5);
      const place = remotePlace(disk.root);
      disk.fill();
      const s = startSender(outbox, place);
      try {
        await s.until('the sender to fail against the full disk', () => (s.sender.failing?.attempts ?? 0) >= 2);
        expect(s.sender.failing!.error).toMatch(/No space left on device/);
        expect(fs.readdirSync(path.join(place, 'jobs')).filter((f) => f.startsWith('fspl-'))).toEqual([]);
        expect(fs.readdirSync(path.join(outbox, 'jobs')).filter((f) => f.startsWith('fspl-'))).toHaveLength(5);
        disk.free();
        await s.until('the outbox to empty', () => outboxEmpty(outbox));
        expect(s.sender.failing).toBeUndefined();
      } finally {
        disk.free();
        await s.stop();
      }
      await expectExactlyOnce(place, 5);
    }, 60_000);

    // Each step of the receiver (receiveScript()) meeting a fault, then cleared. `npm run test:all` takes
    // two of them (each is about a second: a connection and the sender's backoff), `npm run
    // test:faults` all.
    const allSteps: Array<[string, (place: string) => FaultRule]> = [
      [
        'the packet cannot be written (ENOSPC)',
        (p) => ({ op: 'write', error: 'ENOSPC', when: { nth: 2 }, path: `${p}/jobs/.fspl-in-*` }),
      ],
      [
        "the packet's fsync fails (EIO)",
        (p) => ({ op: 'fsync', error: 'EIO', when: { nth: 3 }, path: `${p}/jobs/.fspl-in-*` }),
      ],
      [
        'recvseq cannot be written (ENOSPC)',
        (p) => ({ op: 'write', error: 'ENOSPC', when: { nth: 2 }, path: `${p}/recvseq.tmp` }),
      ],
      ["recvseq's rename fails (EIO)", (p) => ({ op: 'rename', error: 'EIO', when: { nth: 2 }, path: `${p}/recvseq` })],
      [
        "the place's fsync after recvseq fails (EIO)",
        (p) => ({ op: 'fsync', error: 'EIO', when: { nth: 2 }, path: p }),
      ],
      [
        "the packet's rename to its job name fails (EIO)",
        (p) => ({ op: 'rename', error: 'EIO', when: { nth: 2 }, path: `${p}/jobs/fspl-*` }),
      ],
      [
        'the fsync of jobs/ after the rename fails (EIO)',
        (p) => ({ op: 'fsync', error: 'EIO', when: { nth: 4 }, path: `${p}/jobs` }),
      ],
    ];
    const receiverFaults = process.env.FSPL_FAULT_RUNS ? allSteps : allSteps.filter((_, i) => i === 0 || i === 4);
    test.each(receiverFaults)(
      "the receiver's disk fails: %s; the sender tries again, each packet arrives once",
      async (_what, rule) => {
        const outbox = await outboxWith(disk.root, 4);
        const place = remotePlace(ffs.root);
        await ffs.fault(rule(place));
        const before = (await ffs.faultCounters()).faults;
        const s = startSender(outbox, place);
        try {
          await s.until('the outbox to empty', () => outboxEmpty(outbox));
        } finally {
          await ffs.clear();
          await s.stop();
        }
        expect((await ffs.faultCounters()).faults - before, 'the fault fired').toBe(1);
        await expectExactlyOnce(place, 4);
      },
      60_000,
    );

    // The sender's own disk (its outbox) failing as it takes acknowledged packets off the outbox.
    // (With the attempts failed before the fault is cleared.)
    const senderFaults: Array<[string, (outbox: string) => FaultRule, number]> = [
      [
        'nextseq cannot be written (ENOSPC)',
        (o) => ({ op: 'write', error: 'ENOSPC', when: { nth: 1 }, path: `${o}/nextseq*` }),
        1,
      ],
      [
        "nextseq's fsync fails (EIO)",
        (o) => ({ op: 'fsync', error: 'EIO', when: { nth: 1 }, path: `${o}/nextseq*` }),
        1,
      ],
      [
        "nextseq's rename fails (EIO)",
        (o) => ({ op: 'rename', error: 'EIO', when: { nth: 1 }, path: `${o}/nextseq*` }),
        1,
      ],
      [
        'a packet cannot be removed, again and again (EIO)',
        (o) => ({ op: 'unlink', error: 'EIO', when: { from: 2 }, path: `${o}/jobs/fspl-*` }),
        1,
      ],
    ];
    test.each(senderFaults)(
      "the sender's own disk fails: %s; it tries again, nothing is doubled",
      async (_what, rule, attempts) => {
        const outbox = await outboxWith(ffs.root, 4);
        const place = remotePlace(disk.root);
        await ffs.fault(rule(outbox));
        const before = (await ffs.faultCounters()).faults;
        const s = startSender(outbox, place);
        try {
          await s.until('the sender to meet the fault', () => (s.sender.failing?.attempts ?? 0) >= attempts);
          expect(s.sender.failing!.error).toMatch(/^this host's disk: /);
          await ffs.clear();
          await s.until('the outbox to empty', () => outboxEmpty(outbox));
        } finally {
          await ffs.clear();
          await s.stop();
        }
        expect((await ffs.faultCounters()).faults - before, 'the fault fired').toBeGreaterThan(0);
        await expectExactlyOnce(place, 4);
      },
      60_000,
    );
  },
);
