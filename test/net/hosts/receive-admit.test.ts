/**
 * What `fspl net receive NET --host H PLACE` takes (src/net/hosts/receive-admit.ts), driven as
 * nncp-toss drives it: frames on stdin, NNCP_SENDER in the environment. Only a place of H that a
 * transition on another host writes, and, when NNCP_SENDER is set, only from that host's NNCP
 * node (or from the nodes of H's `nncp.from`); a refusal is one line, exit 1, and nothing stored
 * (no job, no ledger, no lock).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { Net, ReceiveRefusedError } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { frame } from '../../send/frame-helpers.js';
import { netDir, runFspl, tokensIn } from '../helpers.js';

/** Node ids as NNCP_SENDER gives them. */
const ALICE = 'A'.repeat(52);
const CAROL = 'C'.repeat(52);

/**
 * A net a -> b: `ship` on a feeds `review` on b, whose `check` writes `approved` on b. b's NNCP
 * config (the one it sends to a with) knows alice (host a's node) and carol, another neighbour.
 */
function setUp(bEntry = 'b: { nncp: { node: bob } }', aEntry = '') {
  const dir = netDir();
  const cfg = path.join(dir, 'b.hjson');
  fs.writeFileSync(
    cfg,
    JSON.stringify({ 'mcd-listen': [], 'mcd-send': {}, neigh: { alice: { id: ALICE }, carol: { id: CAROL } } }),
  );
  const file = path.join(dir, 'net.yaml');
  fs.writeFileSync(
    file,
    `hosts:
  ${aEntry || `a: { nncp: { node: alice, cfg: ${cfg} } }`}
  ${bEntry}
places:
  src: { host: a }
  review: { host: b }
  approved: { host: b }
  mirror: { host: b, sync: true }
  back: { host: a }
transitions:
  ship: { host: a, in: src, out: [review, mirror] }
  check: { host: b, in: review, out: approved }
  answer: { host: b, in: approved, out: back }
  drop: { host: b, in: mirror }
  finish: { host: a, in: back }
`,
  );
  const net = Net.load(file);
  net.init({ host: 'b' });
  return { dir, file, net };
}

/** What a place's directory holds: unchanged by a refusal. */
const contents = (dir: string, place: string) => {
  const q = path.join(dir, 'places', place);
  return [...fs.readdirSync(q), ...fs.readdirSync(path.join(q, 'jobs')).map((n) => `jobs/${n}`)].sort();
};

const receive = (file: string, place: string, sender: string | undefined) =>
  runFspl(['net', 'receive', file, '--host', 'b', place], { input: frame(1), env: { NNCP_SENDER: sender } });

describe('fspl net receive: only what is addressed to it', () => {
  test('a place no other host feeds is refused, from anyone: one line, nothing stored', async () => {
    const { dir, file } = setUp();
    const before = contents(dir, 'approved');
    for (const sender of [ALICE, undefined]) {
      const r = await receive(file, 'approved', sender);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(
        'Error: refused: no other host feeds place approved on host b (written by check on host b); fspl ' +
          'net receive takes tokens only for a place that a transition on another host writes, nothing stored\n',
      );
    }
    const sync = await receive(file, 'mirror', ALICE);
    expect(sync.status).toBe(1);
    expect(sync.stderr).toMatch(
      new RegExp(
        /^Error: refused: place mirror on host b is filled by a sync /.source +
          /tool from host a \(sync: true\), not through NNCP; .*\n$/.source,
      ),
    );
    expect(contents(dir, 'approved')).toEqual(before);
    expect(contents(dir, 'mirror')).toEqual(before);
  });

  test(
    'the fed place from another node is refused; from ' + "the feeding host's node, or run by hand, it lands",
    async () => {
      const { dir, file, net } = setUp();
      const before = contents(dir, 'review');
      const wrong = await receive(file, 'review', CAROL);
      expect(wrong.status).toBe(1);
      expect(wrong.stderr).toMatch(
        new RegExp(
          /^Error: refused: place review on host b \(\S+\) takes packets only from NNCP /.source +
            /node alice \(A{52}\), not from C{52} \(carol in \S+b\.hjson\); nothing stored\n$/.source,
        ),
      );
      expect(contents(dir, 'review')).toEqual(before);
      await expect(
        net.receive('review', Readable.from([frame(1)]), { host: 'b', sender: CAROL }),
      ).rejects.toBeInstanceOf(ReceiveRefusedError);
      const right = await receive(file, 'review', ALICE);
      expect(right.status, right.stderr).toBe(0);
      expect(fs.readFileSync(path.join(dir, 'places/review/received'), 'utf8')).toBe('1 1\n');
      const byHand = await runFspl(['net', 'receive', file, '--host', 'b', 'review'], {
        input: frame(2),
        env: { NNCP_SENDER: undefined },
      });
      expect(byHand.status, byHand.stderr).toBe(0);
      expect((await tokensIn(path.join(dir, 'places/review'))).map((t) => t.seq)).toEqual([1n, 2n]);
    },
  );

  test(
    "b's own from: replaces the feeding host's node; a feeder whose " +
      'node the net does not say is refused when NNCP_SENDER is set',
    async () => {
      const listed = setUp(`b: { nncp: { node: bob, from: [carol] } }`);
      expect((await receive(listed.file, 'review', ALICE)).status).toBe(1);
      const carol = await receive(listed.file, 'review', CAROL);
      expect(carol.status, carol.stderr).toBe(0);
      const byId = setUp(`b: { nncp: { node: bob, from: ${ALICE} } }`);
      expect((await receive(byId.file, 'review', ALICE)).status).toBe(0);
      // a reached over ssh (by a command that goes nowhere): which node it sends to b from, the net can't say.
      const ssh = setUp('b: { nncp: { node: bob } }', 'a: { ssh: [/bin/false, a] }');
      const before = contents(ssh.dir, 'review');
      const r = await receive(ssh.file, 'review', ALICE);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          /^Error: refused: place review on host b \(\S+\) was sent tokens by NNCP node A{52}, but /.source +
            /host a is not reached through NNCP, so the net does not say which NNCP node it sends /.source +
            /from: name its node in hosts: \{ b: \{ nncp: \{ from: \[NODE\] \} \} \}; nothing stored\n$/.source,
        ),
      );
      expect(contents(ssh.dir, 'review')).toEqual(before);
      const check = await runFspl(['net', 'check', ssh.file, '--host', 'b'], {
        env: { NNCPCFG: path.join(ssh.dir, 'b.hjson') },
      });
      expect(check.status).toBe(1);
      expect(check.stderr).toMatch(
        new RegExp(
          /host b receives review from a through NNCP: fspl net receive /.source +
            /would refuse its tokens: host a is not reached through NNCP/.source,
        ),
      );
    },
  );
});
