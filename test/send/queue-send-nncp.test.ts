/**
 * `fspl queue-send --to nncp:NODE:HANDLE` with real NNCP nodes (test/harness/nncp.ts): the
 * outbox's packets are handed to nncp-exec, the receiving node's exec handle runs
 * `fspl queue-receive -q QUEUE`, and the queue runs each packet once, in order, whether NNCP moves
 * them online or by a transfer directory offered twice, and through a sender killed with kill -9.
 * The queue is a plain Filespooler queue: the reference runs it too. With `--from`, the handle
 * takes packets only from the node NNCP says sent them (NNCP_SENDER). `--nncp-cfg` names the
 * sending node's config, and wins over an NNCPCFG that names another node. Each run says its
 * result in one line.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { NNCP_TOOLS, type NncpPair, startNncpPair } from '../harness/nncp.js';
import { onPath, waitFor } from '../harness/proc.js';
import { FSPL_BIN, tempDir } from '../helpers.js';
import { fspl, type Impl, jobFiles, prepare, processQueue, REF_BIN } from '../transports/fspl.js';

const missing = [
  ...NNCP_TOOLS.filter((t) => !onPath(t)),
  ...(fs.existsSync(REF_BIN) ? [] : [`the reference fspl (${REF_BIN})`]),
];

const pairs: NncpPair[] = [];
afterEach(async () => {
  for (const p of pairs.splice(0)) await p.stop();
});

/** An outbox (ours) holding N packets prepared by IMPL, a queue on b, and a pair whose b runs queue-receive for it. */
async function setUp(impl: Impl, n: number): Promise<{ outbox: string; q: string; pair: NncpPair }> {
  const d = tempDir();
  const outbox = path.join(d, 'outbox');
  const q = path.join(d, 'queue');
  for (const dir of [outbox, q]) expect(fspl('ours', ['queue-init', '-q', dir]).status).toBe(0);
  const seqfile = path.join(d, 'seq');
  for (let i = 1; i <= n; i++) {
    const w = fspl('ours', ['queue-write', '-q', outbox], { input: prepare(impl, seqfile, `job ${i}`) });
    expect(w.status, w.stderr).toBe(0);
  }
  const pair = await startNncpPair({ b: { exec: { fspl: [process.execPath, FSPL_BIN, 'queue-receive', '-q', q] } } });
  pairs.push(pair);
  return { outbox, q, pair };
}

const send = (outbox: string, pair: NncpPair, extra: string[] = []) =>
  spawnSync(process.execPath, [FSPL_BIN, 'queue-send', '-q', outbox, '--to', 'nncp:b:fspl', ...extra], {
    encoding: 'utf8',
    env: { ...process.env, NNCPCFG: pair.a.cfg },
  });

const expected = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1} job ${i + 1}`);

describeIfPresent(
  'fspl queue-send through NNCP',
  missing,
  { what: 'NNCP queue-send tests', note: 'apt-get install nncp filespooler' },
  () => {
    test.each(['ours', 'ref'] as const)(
      '%s packets handed to NNCP, moved online, received once each; both implementations run them in order',
      async (impl) => {
        const { outbox, q, pair } = await setUp(impl, 30);
        const r = send(outbox, pair);
        expect(r.status, r.stderr).toBe(0);
        // One line: the run's result, said once.
        expect(r.stderr).toBe(
          'fspl queue-send: handed 30 packets for nncp:b:fspl to NNCP in 1 batch; 0 packets wait, next 31\n',
        );
        expect(jobFiles(outbox)).toEqual([]);
        await pair.online('a', 'b');
        await pair.toss('b');
        expect(jobFiles(q)).toHaveLength(30);
        const ran = processQueue(impl, q);
        expect(ran.status, ran.stderr).toBe(0);
        expect(ran.ran).toEqual(expected(30));
      },
    );

    test('a sender killed with kill -9 while it hands a batch over, ' +
      'then a transfer offered twice: each packet runs once, in order', {
      timeout: 180_000,
    }, async () => {
      const { outbox, q, pair } = await setUp('ours', 100);
      // Killed at once after it starts: it may have handed over nothing, all, or a batch cut short.
      const first = spawn(process.execPath, [FSPL_BIN, 'queue-send', '-q', outbox, '--to', 'nncp:b:fspl', '--watch'], {
        env: { ...process.env, NNCPCFG: pair.a.cfg },
        stdio: 'ignore',
      });
      await waitFor(
        'nncp-exec started',
        () => pair.outbound('a').length > 0 || jobFiles(outbox).length < 100,
        20_000,
        5,
      ).catch(() => undefined);
      first.kill('SIGKILL');
      await new Promise((r) => first.on('exit', r));
      const r = send(outbox, pair);
      expect(r.status, r.stderr).toBe(0);
      expect(jobFiles(outbox)).toEqual([]);
      const stick = path.join(tempDir(), 'stick');
      fs.mkdirSync(stick);
      await pair.run('a', 'nncp-xfer', ['-mkdir', '-tx', stick]);
      const copy = `${stick}-copy`;
      fs.cpSync(stick, copy, { recursive: true });
      await pair.run('b', 'nncp-xfer', ['-rx', stick]);
      await pair.toss('b');
      const ran = processQueue('ours', q);
      expect(ran.status, ran.stderr).toBe(0);
      expect(ran.ran).toEqual(expected(100));
      // The same transfer again, after the jobs ran: every copy is dropped.
      await pair.run('b', 'nncp-xfer', ['-rx', copy]);
      await pair.toss('b');
      expect(jobFiles(q)).toEqual([]);
      expect(fs.readFileSync(path.join(q, 'received'), 'utf8')).toBe('1 100\n');
    });

    test(
      'queue-receive --from under real NNCP: from a node other than the sender, nncp-toss ' +
        'fails and keeps the packet, nothing stored; --from the sender by id, it lands',
      async () => {
        const { outbox, q, pair } = await setUp('ours', 3);
        const cfg = JSON.parse(fs.readFileSync(pair.b.cfg, 'utf8'));
        const handle = (from: string) => {
          cfg.neigh.a.exec.fspl = [process.execPath, FSPL_BIN, 'queue-receive', '-q', q, '--from', from];
          fs.writeFileSync(pair.b.cfg, JSON.stringify(cfg));
        };
        handle(cfg.neigh.self.id); // b's own id: not who sends
        const before = fs.readdirSync(q).sort();
        const r = send(outbox, pair);
        expect(r.status, r.stderr).toBe(0);
        await pair.online('a', 'b');
        await expect(pair.toss('b')).rejects.toThrow();
        expect(fs.readdirSync(q).sort()).toEqual(before); // no ledger, no lock
        expect(jobFiles(q)).toEqual([]);
        expect(fs.readFileSync(pair.b.log, 'utf8')).toContain(`not from ${cfg.neigh.a.id}`);
        handle(cfg.neigh.a.id); // NNCP kept the packet: the next toss delivers it
        await pair.toss('b');
        expect(jobFiles(q)).toHaveLength(3);
      },
    );

    test(
      '--nncp-cfg names the sending node: it wins over an NNCPCFG ' +
        'naming the receiving node (which NNCP itself would take over -cfg)',
      async () => {
        const { outbox, q, pair } = await setUp('ours', 2);
        const asB = { ...process.env, NNCPCFG: pair.b.cfg };
        // NNCPCFG alone names b, which has no neighbour called b: nothing handed over.
        const wrong = spawnSync(process.execPath, [FSPL_BIN, 'queue-send', '-q', outbox, '--to', 'nncp:b:fspl'], {
          encoding: 'utf8',
          env: asB,
        });
        expect(wrong.status).toBe(1);
        expect(wrong.stderr).toMatch(/^fspl queue-send: cannot deliver to nncp:b:fspl: nncp-exec exited with status 1/);
        const r = spawnSync(
          process.execPath,
          [FSPL_BIN, 'queue-send', '-q', outbox, '--to', 'nncp:b:fspl', '--nncp-cfg', pair.a.cfg],
          {
            encoding: 'utf8',
            env: asB,
          },
        );
        expect(r.status, r.stderr).toBe(0);
        expect(r.stderr).toBe(
          'fspl queue-send: handed 2 packets for nncp:b:fspl to NNCP in 1 batch; 0 packets wait, next 3\n',
        );
        expect(pair.outbound('a')).toHaveLength(1);
        await pair.online('a', 'b');
        await pair.toss('b');
        expect(jobFiles(q)).toHaveLength(2);
        expect(processQueue('ours', q).ran).toEqual(expected(2));
      },
    );

    test(
      'bad use: --ssh or --remote-fspl with nncp:, --nncp-cfg with ssh:, a malformed ' +
        'nncp: destination, NNCP that does not know the node, a config that is not there',
      async () => {
        const { outbox, pair } = await setUp('ours', 1);
        const both = send(outbox, pair, ['--remote-fspl', '/usr/bin/fspl']);
        expect(both.status).toBe(2);
        expect(both.stderr).toMatch(/--remote-fspl applies to ssh: destinations/);
        const bad = spawnSync(process.execPath, [FSPL_BIN, 'queue-send', '-q', outbox, '--to', 'nncp:b'], {
          encoding: 'utf8',
        });
        expect(bad.status).toBe(2);
        expect(bad.stderr).toMatch(/expected nncp:NODE:HANDLE/);
        const unknown = spawnSync(
          process.execPath,
          [FSPL_BIN, 'queue-send', '-q', outbox, '--to', 'nncp:nobody:fspl'],
          {
            encoding: 'utf8',
            env: { ...process.env, NNCPCFG: pair.a.cfg },
          },
        );
        expect(unknown.status).toBe(1);
        // A run that handed nothing over says why, once, and not "handed 0 packets in 1 batch".
        expect(unknown.stderr).toMatch(
          new RegExp(
            /^fspl queue-send: cannot deliver to nncp:nobody:fspl: nncp-exec /.source +
              /exited with status 1: [^\n]+; 1 packet waits, next 1\n$/.source,
          ),
        );
        expect(jobFiles(outbox)).toHaveLength(1);
        const sshOnly = spawnSync(
          process.execPath,
          [FSPL_BIN, 'queue-send', '-q', outbox, '--to', 'ssh:b:/q', '--nncp-cfg', pair.a.cfg],
          { encoding: 'utf8' },
        );
        expect([sshOnly.status, sshOnly.stderr]).toEqual([
          2,
          'error: --nncp-cfg applies to nncp: destinations (it names the NNCP config nncp-exec uses)\n',
        ]);
        const noFile = send(outbox, pair, ['--nncp-cfg', path.join(pair.dir, 'none.hjson')]);
        expect(noFile.status).toBe(1);
        expect(noFile.stderr).toMatch(
          new RegExp(
            /^fspl queue-send: cannot deliver to nncp:b:fspl: nncp-exec /.source +
              /exited with status 1: .*none\.hjson.*; 1 packet waits, next 1\n$/.source,
          ),
        );
        expect(jobFiles(outbox)).toHaveLength(1);
      },
    );
  },
);
