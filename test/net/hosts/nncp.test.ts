/**
 * NNCP as a host kind for nets (docs/distributed.md, "Hosts reached through NNCP"): a net
 * a -> b -> a whose hosts reach each other only through real NNCP nodes (test/harness/nncp.ts,
 * multicast off, loopback only). Each host's outbox hands its tokens to nncp-exec; the other
 * node's nncp-toss runs `fspl net receive` as its exec handle, which stores each token once.
 *
 * - Online (nncp-daemon and nncp-call), with `kill -9` of each side's runner 5 times, and a
 *   transfer directory offered a second time (NNCP tosses its packets again: duplicates reach the
 *   handle): every key arrives once, in order.
 * - Files only (nncp-xfer through a directory the test carries between the hosts, as a USB stick),
 *   each host's run started with --drain after the stick arrived.
 * - `net check --host` on both sides (the node known, the handle configured), and `net status`
 *   (handed to NNCP on the sender; received ranges on the receiver).
 */

import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { describeIfPresent } from '../../gate.js';
import { NNCP_TOOLS, type NncpPair, startNncpPair } from '../../harness/nncp.js';
import { onPath, waitFor } from '../../harness/proc.js';
import { FSPL_BIN } from '../../helpers.js';
import { netDir, runFspl, seeded, sleep, spawnFspl, tokensIn } from '../helpers.js';

const missing = [...NNCP_TOOLS, 'nncp-stat'].filter((t) => !onPath(t)).map((t) => `${t} (apt-get install nncp)`);

const pairs: NncpPair[] = [];
const running = new Set<ChildProcess>();
afterEach(async () => {
  for (const c of running) c.kill('SIGKILL');
  running.clear();
  for (const p of pairs.splice(0)) await p.stop();
});

const count = (dir: string) =>
  fs.existsSync(path.join(dir, 'jobs'))
    ? fs.readdirSync(path.join(dir, 'jobs')).filter((n) => /^fspl-.*\.fspl$/.test(n)).length
    : 0;

/** The net and a pair of NNCP nodes whose exec handle `fspl` runs `fspl net receive` for it. */
async function setUp(): Promise<{ dir: string; file: string; pair: NncpPair }> {
  const dir = netDir();
  const file = path.join(dir, 'net.yaml');
  const handle = (host: string) => ({
    exec: { fspl: [process.execPath, FSPL_BIN, 'net', 'receive', file, '--host', host] },
  });
  const pair = await startNncpPair({ a: handle('a'), b: handle('b') });
  pairs.push(pair);
  // Sending to b is done by a's node (a's config); sending to a, by b's.
  fs.writeFileSync(
    file,
    `
hosts:
  a: { nncp: { node: a, cfg: ${pair.b.cfg} } }
  b: { nncp: { node: b, cfg: ${pair.a.cfg} } }
places:
  src: { host: a }
  inbox: { host: b }
  back: { host: a }
  done: { host: a }
transitions:
  ship: { host: a, in: src, out: inbox }
  work: { host: b, in: inbox, run: "tr a-z A-Z", out: back }
  finish: { host: a, in: back, out: done }
`,
  );
  for (const h of ['a', 'b']) expect((await runFspl(['net', 'init', file, '--host', h])).status).toBe(0);
  return { dir, file, pair };
}

async function put(file: string, n: number): Promise<void> {
  const { Net } = await import('filespooler');
  const net = Net.load(file);
  for (let i = 0; i < n; i++)
    await net.put('src', Buffer.from(`token ${i}\n`), { key: `k${String(i).padStart(3, '0')}` });
}

function start(file: string, host: string, extra: string[] = []): ChildProcess {
  const c = spawnFspl(['net', 'run', file, '--host', host, '--log-level', 'warn', ...extra]);
  c.stderr!.on('data', () => {});
  c.stdout!.on('data', () => {});
  running.add(c);
  c.on('exit', () => running.delete(c));
  return c;
}

const exited = (c: ChildProcess) =>
  new Promise<number | null>((r) =>
    c.exitCode !== null || c.signalCode !== null ? r(c.exitCode) : c.on('exit', (code) => r(code)),
  );

/** nncp-toss, which fails when a handle failed: with the handle's own words from NNCP's log. */
async function toss(pair: NncpPair, node: 'a' | 'b'): Promise<void> {
  try {
    await pair.toss(node);
  } catch {
    const records = fs
      .readFileSync(pair[node].log, 'utf8')
      .split(/\n(?=When:)/)
      .filter((r) => /^Err:/m.test(r));
    throw new Error(
      `nncp-toss on ${node} failed (a handle failed, and NNCP keeps its packet):\n${records.slice(-3).join('\n')}`,
    );
  }
}

/** Exec packets tossed by a node so far, from its NNCP log. */
function execsTossed(log: string): number {
  if (!fs.existsSync(log)) return 0;
  return fs
    .readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => /^Msg: Got exec from /.test(l)).length;
}

async function expectAllOnceInOrder(dir: string, n: number): Promise<void> {
  const done = await tokensIn(path.join(dir, 'places/done'));
  const keys = Array.from({ length: n }, (_, i) => `k${String(i).padStart(3, '0')}`);
  expect(done.filter((t) => t.kind === 'Command').map((t) => t.key)).toEqual(keys);
  expect(done.filter((t) => t.kind === 'Command').map((t) => t.payload)).toEqual(keys.map((_, i) => `TOKEN ${i}\n`));
}

describeIfPresent(
  'nets across hosts reached through NNCP',
  missing,
  { what: 'NNCP net tests', note: 'apt-get install nncp' },
  () => {
    test(
      'net check --host: the node known on the sending side, ' + 'the handle on the receiving side; one-line errors',
      async () => {
        const { file, pair } = await setUp();
        const a = await runFspl(['net', 'check', file, '--host', 'a'], { env: { NNCPCFG: pair.a.cfg } });
        expect(a.stderr).toBe('');
        expect(a.stdout).toContain('host a sends inbox to b through NNCP (node b): ok');
        expect(a.stdout).toMatch(
          /host a receives back from b through NNCP: ok \(handle "fspl" of node b in .*a\.hjson runs/,
        );
        expect(a.status).toBe(0);
        // A handle that runs something else.
        const cfg = JSON.parse(fs.readFileSync(pair.a.cfg, 'utf8'));
        cfg.neigh.b.exec.fspl = ['fspl', 'queue-write', '-q', '/tmp/x'];
        fs.writeFileSync(pair.a.cfg, JSON.stringify(cfg));
        const h = await runFspl(['net', 'check', file, '--host', 'a']);
        expect(h.status).toBe(1);
        expect(h.stderr).toMatch(
          new RegExp(
            /^\S+: host a receives back from b through NNCP: handle "fspl" of node b /.source +
              /in \S+ runs \["fspl","queue-write","-q","\/tmp\/x"\], not fspl net receive /.source +
              /\(want exec: \{ fspl: \[fspl, net, receive, \S+, --host, a\] \}\)\n$/.source,
          ),
        );
        // A node this config does not know.
        fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('node: b,', 'node: nobody,'));
        const r = await runFspl(['net', 'check', file, '--host', 'a']);
        expect(r.status).toBe(1);
        const lines = r.stderr.trim().split('\n');
        expect(lines).toHaveLength(2);
        expect(lines[0]).toMatch(
          /host a sends inbox to b through NNCP \(node nobody\): nncp-stat exited with status 1: .*nobody/,
        );
        expect(lines[1]).toMatch(
          /host a receives back from b through NNCP: \S+ gives node nobody no exec handle "fspl"/,
        );
      },
    );

    test('a -> b -> a online, 300 tokens, kill -9 of each runner 5 ' +
      'times, a transfer offered twice: every key once, in order', {
      timeout: 180_000,
    }, async () => {
      const { dir, file, pair } = await setUp();
      const n = 300;
      await put(file, n);
      const runners = { a: start(file, 'a'), b: start(file, 'b') };
      const rand = seeded(34);
      let moving = true;
      let moves = 0;
      // NNCP's part: move the spools both ways and toss, again and again. The first moves from b to
      // a go by nncp-xfer with -keep, and the stick is copied aside: its packets also stay in b's
      // spool (so they go again online), and the copy is offered again at the end.
      const kept: string[] = [];
      const mover = (async () => {
        while (moving) {
          await pair.online('a', 'b');
          await toss(pair, 'b');
          if (kept.length < 3)
            await waitFor("b's tokens", () => pair.outbound('b').length > 0, 3000, 50).catch(() => undefined);
          if (kept.length < 3 && pair.outbound('b').length > 0) {
            const stick = path.join(dir, `stick-${kept.length}`);
            fs.mkdirSync(stick);
            await pair.run('b', 'nncp-xfer', ['-mkdir', '-keep', '-tx', stick]);
            fs.cpSync(stick, `${stick}.copy`, { recursive: true });
            await pair.run('a', 'nncp-xfer', ['-rx', stick]);
            kept.push(`${stick}.copy`);
          } else await pair.online('b', 'a');
          await toss(pair, 'a');
          moves++;
          await sleep(200);
        }
      })();
      // Each side's runner killed 5 times, at random points, and started again.
      for (let k = 0; k < 10; k++) {
        await sleep(500 + rand(1500));
        const host = k % 2 === 0 ? 'a' : 'b';
        runners[host].kill('SIGKILL');
        await exited(runners[host]);
        runners[host] = start(file, host);
      }
      await waitFor(`${n} tokens done on a`, () => count(path.join(dir, 'places/done')) >= n, 240_000, 200);
      moving = false;
      await mover;
      expect(kept.length).toBeGreaterThan(0);
      // The kept sticks offered again, long after their tokens were consumed: every packet in them
      // reaches the handle once more, and is dropped.
      const tossedBefore = execsTossed(pair.a.log);
      for (const stick of kept) {
        await pair.run('a', 'nncp-xfer', ['-rx', stick]);
        await toss(pair, 'a');
      }
      expect(execsTossed(pair.a.log)).toBeGreaterThan(tossedBefore);
      await sleep(1000); // anything doubled would show now
      expect(moves).toBeGreaterThan(0);
      await expectAllOnceInOrder(dir, n);
      const statusA = await runFspl(['net', 'status', file, '--host', 'a']);
      expect(statusA.stdout).toMatch(
        new RegExp(`inbox\\s+outbox.*through NNCP \\(node b\\): 0 waiting; handed to NNCP up to #${n}`),
      );
      const statusB = await runFspl(['net', 'status', file, '--host', 'b']);
      expect(statusB.stdout).toMatch(
        new RegExp(`inbox .*written by host a \\(its outbox, through NNCP; received 1-${n}\\)`),
      );
      for (const c of Object.values(runners)) c.kill('SIGTERM');
      await Promise.all(Object.values(runners).map(exited));
    });

    test('a -> b -> a by nncp-xfer alone: the stick carried between hosts, each run with --drain', async () => {
      const { dir, file, pair } = await setUp();
      const n = 60;
      await put(file, n);
      const stick = path.join(dir, 'stick');
      const drain = async (host: string) => {
        const r = await runFspl(['net', 'run', file, '--host', host, '--drain']);
        expect(r.status, r.stderr).toBe(0);
      };
      await drain('a'); // ship: into a's outbox, handed to NNCP
      expect(count(path.join(dir, 'net.state/a/outbox/inbox'))).toBe(0);
      await pair.xfer('a', 'b', stick);
      await toss(pair, 'b');
      expect(count(path.join(dir, 'places/inbox'))).toBe(n);
      await drain('b'); // work, handed back to NNCP
      await pair.xfer('b', 'a', stick);
      await toss(pair, 'a');
      await drain('a'); // finish
      await expectAllOnceInOrder(dir, n);
    });
  },
);
