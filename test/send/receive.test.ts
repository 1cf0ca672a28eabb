/**
 * The receiver that NNCP feeds (src/send/receive.ts, `fspl queue-receive`) and its ledger of
 * received numbers (received.ts): each packet stored once whatever order its copies come in; a
 * copy of a consumed packet is not stored again; damaged or misnumbered packets are refused
 * whole; a cut input keeps its whole frames; parts left by a killed receiver are finished or
 * removed by what the ledger says. With `from` (`--from NODE`), only what NNCP says came from one
 * of those nodes (NNCP_SENDER, by id or by its name in the NNCP config) is taken; anything else
 * is refused before the input is read, and nothing is stored.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { Queue } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { ReceiveRefusedError } from '../../src/base/errors.js';
import { receivePackets } from '../../src/send/receive.js';
import { ReceivedLedger } from '../../src/send/received.js';
import { FSPL_BIN, memTempDir } from '../helpers.js';
import { frame, packet } from './frame-helpers.js';

function queue(): string {
  const q = path.join(memTempDir(), 'q');
  Queue.init(q);
  return q;
}

const input = (...frames: Buffer[]) => Readable.from([Buffer.concat(frames)]);
const jobs = (q: string) =>
  fs
    .readdirSync(path.join(q, 'jobs'))
    .filter((n) => !n.startsWith('.'))
    .sort();

describe('ReceivedLedger', () => {
  test('ranges merge as gaps close, in any order; written and read back', () => {
    const q = queue();
    const l = ReceivedLedger.read(q);
    for (const s of [5n, 1n, 3n, 2n, 7n, 100n]) l.add(s);
    expect(l.describe()).toBe('1-3, 5, 7, 100');
    l.add(4n);
    l.add(6n);
    expect(l.describe()).toBe('1-7, 100');
    l.write();
    expect(fs.readFileSync(path.join(q, 'received'), 'utf8')).toBe('1 7\n100 100\n');
    const back = ReceivedLedger.read(q);
    expect([0n, 1n, 7n, 8n, 99n, 100n, 101n].map((s) => back.has(s))).toEqual([
      false,
      true,
      true,
      false,
      false,
      true,
      false,
    ]);
    expect(back.has(18446744073709551615n)).toBe(false);
  });

  test('a damaged ledger is refused, with its line', () => {
    const q = queue();
    fs.writeFileSync(path.join(q, 'received'), '1 3\n9 2\n');
    expect(() => ReceivedLedger.read(q)).toThrow(/received:2: not a range/);
  });
});

describe('receivePackets', () => {
  test('out of order, with copies in one input and in later ones: each number stored once', async () => {
    const q = queue();
    expect(await receivePackets(q, input(frame(3), frame(1), frame(3)))).toMatchObject({ stored: 2, duplicates: 1 });
    expect(await receivePackets(q, input(frame(1), frame(2), frame(3)))).toMatchObject({ stored: 1, duplicates: 2 });
    expect(jobs(q)).toEqual(['fspl-id-1.fspl', 'fspl-id-2.fspl', 'fspl-id-3.fspl']);
    expect(ReceivedLedger.read(q).describe()).toBe('1-3');
  });

  test('a copy of a packet already consumed is not stored again', async () => {
    const q = queue();
    await receivePackets(q, input(frame(1)));
    fs.rmSync(path.join(q, 'jobs', 'fspl-id-1.fspl'));
    expect(await receivePackets(q, input(frame(1)))).toMatchObject({ stored: 0, duplicates: 1 });
    expect(jobs(q)).toEqual([]);
  });

  test('a damaged packet, or one whose number is not its frame’s, is refused and nothing of it stays', async () => {
    const q = queue();
    const damaged = packet(1);
    damaged[damaged.length - 2] ^= 1;
    await expect(receivePackets(q, input(frame(1, damaged)))).rejects.toThrow(/packet id-1 \(number 1\) is damaged/);
    await expect(receivePackets(q, input(frame(2, packet(5))))).rejects.toThrow(/numbered 5, but its frame says 2/);
    await expect(receivePackets(q, Readable.from([Buffer.from('not a frame\n')]))).rejects.toThrow(/bad frame/);
    expect(fs.readdirSync(path.join(q, 'jobs'))).toEqual([]);
    expect(ReceivedLedger.read(q).describe()).toBe('none');
  });

  test('an input cut inside a frame keeps the whole frames before it', async () => {
    const q = queue();
    const cut = frame(2).subarray(0, 20);
    const r = await receivePackets(q, input(frame(1), cut));
    expect(r).toMatchObject({ stored: 1, cut: expect.stringMatching(/input ends inside a packet/) });
    expect(jobs(q)).toEqual(['fspl-id-1.fspl']);
    expect(fs.readdirSync(path.join(q, 'jobs')).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  test('parts of a killed receiver: stored when the ledger has their numbers, removed when not', async () => {
    const q = queue();
    const l = ReceivedLedger.read(q);
    l.add(1n);
    l.write();
    fs.writeFileSync(path.join(q, 'jobs', '.fspl-in-id-1.part'), packet(1)); // recorded, not yet renamed
    fs.writeFileSync(path.join(q, 'jobs', '.fspl-in-id-2.part'), packet(2)); // never recorded
    const r = await receivePackets(q, input());
    expect(r).toMatchObject({ finished: 1, stored: 0 });
    expect(fs.readdirSync(path.join(q, 'jobs')).sort()).toEqual(['fspl-id-1.fspl']);
  });

  test('no queue: a one-line error', async () => {
    await expect(receivePackets(path.join(memTempDir(), 'nope'), input(frame(1)))).rejects.toThrow(
      /^no queue at .*nope \(make it with fspl queue-init/,
    );
  });

  test('fspl queue-receive: stores, then runs in order; exit 1 with one line for a bad input', () => {
    const q = queue();
    const ok = spawnSync(process.execPath, [FSPL_BIN, 'queue-receive', '-q', q], {
      input: Buffer.concat([frame(2), frame(1), frame(2)]),
    });
    expect(ok.status, ok.stderr.toString()).toBe(0);
    const ran = spawnSync(process.execPath, [FSPL_BIN, 'queue-process', '-q', q, 'cat'], { encoding: 'utf8' });
    expect(ran.stdout).toBe('job 1\njob 2\n');
    const bad = spawnSync(process.execPath, [FSPL_BIN, 'queue-receive', '-q', q], {
      input: 'x 9 5\nabcde',
      encoding: 'utf8',
    });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/^Error: packet x \(number 9\) is not a whole packet: .*\n$/);
  });
});

/** Node ids as NNCP_SENDER gives them (52 characters of base32). */
const ALICE = 'A'.repeat(52);
const CAROL = 'C'.repeat(26) + '7'.repeat(26);

/** A receiving node's NNCP config that knows alice and carol by name (multicast off, as every test config). */
function nncpConfig(): string {
  const file = path.join(memTempDir(), 'nncp.hjson');
  fs.writeFileSync(
    file,
    JSON.stringify({ 'mcd-listen': [], 'mcd-send': {}, neigh: { alice: { id: ALICE }, carol: { id: CAROL } } }),
  );
  return file;
}

/** Everything in the queue directory, with what is in jobs/: unchanged by a refusal. */
const contents = (q: string) =>
  [...fs.readdirSync(q), ...fs.readdirSync(path.join(q, 'jobs')).map((n) => `jobs/${n}`)].sort();

describe('receivePackets from some NNCP nodes only', () => {
  /** An input that fails the test if it is read at all. */
  const untouched = () =>
    new Readable({
      read() {
        throw new Error('the input was read');
      },
    });

  test('the sender by id or by name lands; another, or none, is refused before the input is read', async () => {
    const q = queue();
    const cfg = nncpConfig();
    const before = contents(q);
    const refused = (sender: string | undefined, from: string[]) =>
      receivePackets(q, untouched(), { from, sender, nncpCfg: cfg });
    await expect(refused(CAROL, [ALICE])).rejects.toThrow(
      new RegExp(
        `^refused: queue \\S+ takes packets only from NNCP node ${ALICE}, ` +
          `not from ${CAROL} \\(carol in \\S+nncp.hjson\\); nothing stored$`,
      ),
    );
    await expect(refused(CAROL, ['alice', 'bob'])).rejects.toThrow(
      /only from NNCP node alice \(A{52}\), bob \(not a neighbour in \S+\), not from C/,
    );
    await expect(refused(undefined, [ALICE])).rejects.toThrow(
      /NNCP_SENDER is not set \(not run by nncp-toss as an exec handle\); nothing stored$/,
    );
    const err = await refused(CAROL, ['alice']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReceiveRefusedError);
    expect(err).toMatchObject({ code: 'ERR_RECEIVE_REFUSED' });
    expect(contents(q)).toEqual(before); // no ledger, no lock, no part
    expect(await receivePackets(q, input(frame(1)), { from: [ALICE], sender: ALICE })).toMatchObject({ stored: 1 });
    expect(await receivePackets(q, input(frame(2)), { from: ['carol'], sender: CAROL, nncpCfg: cfg })).toMatchObject({
      stored: 1,
    });
    expect(jobs(q)).toEqual(['fspl-id-1.fspl', 'fspl-id-2.fspl']);
  });

  test('an NNCP config that cannot be read refuses a name, and says so', async () => {
    const q = queue();
    await expect(
      receivePackets(q, untouched(), { from: ['alice'], sender: ALICE, nncpCfg: path.join(q, 'none.hjson') }),
    ).rejects.toThrow(
      new RegExp(
        /not from A{52}; cannot read the NNCP config \S+none\.hjson: /.source +
          /ENOENT, where the names would be looked up; nothing stored$/.source,
      ),
    );
  });

  test(
    'fspl queue-receive --from: the right sender lands, a wrong or ' +
      'missing NNCP_SENDER is refused with one line, nothing stored',
    () => {
      const q = queue();
      const cfg = nncpConfig();
      const before = contents(q);
      const receive = (sender: string | undefined, ...from: string[]) =>
        spawnSync(process.execPath, [FSPL_BIN, 'queue-receive', '-q', q, ...from.flatMap((f) => ['--from', f])], {
          input: frame(1),
          encoding: 'utf8',
          env: { ...process.env, NNCPCFG: cfg, NNCP_SENDER: sender },
        });
      const wrong = receive(CAROL, 'alice');
      expect(wrong.status).toBe(1);
      expect(wrong.stderr).toMatch(
        new RegExp(
          /^Error: refused: queue \S+ takes packets only from NNCP node alice /.source +
            /\(A{52}\), not from C{26}7{26} \(carol in \S+\); nothing stored\n$/.source,
        ),
      );
      const none = receive(undefined, ALICE);
      expect(none.status).toBe(1);
      expect(none.stderr).toMatch(/^Error: refused: .* NNCP_SENDER is not set .*\n$/);
      expect(contents(q)).toEqual(before);
      const bad = receive(ALICE, '');
      expect(bad.status).toBe(2);
      expect(bad.stderr).toBe("error: invalid --from '': give an NNCP node's id or its name in the NNCP config\n");
      const right = receive(CAROL, 'alice', 'carol');
      expect(right.status, right.stderr).toBe(0);
      expect(receive(ALICE, ALICE).status).toBe(0); // a copy: dropped
      expect(jobs(q)).toEqual(['fspl-id-1.fspl']);
      // Without --from, anyone (as before).
      expect(receive(undefined).status).toBe(0);
    },
  );
});
