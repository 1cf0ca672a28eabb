/** Nets on several hosts: the checks on hosts, and the view one host runs. */
import path from 'node:path';
import { parseNetText } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { drainPlan, judge, type Look, type UpstreamHost } from '../../../src/net/hosts/drain.js';
import { hostConfig, hostView } from '../../../src/net/model/hosts.js';

const problems = (yaml: string): string[] => {
  try {
    parseNetText(yaml, '/tmp/n/net.yaml');
    return [];
  } catch (err) {
    return (err as { problems: Array<{ line: number; message: string }> }).problems.map(
      (p) => `${p.line}: ${p.message}`,
    );
  }
};

describe('hosts', () => {
  test('every item names a known host; transitions read their own host; one host writes a place', () => {
    expect(
      problems(`hosts: { a: {}, b: { ssh: [ssh, -F, cfg, b], color: red } }
places:
  x: { host: a }
  y: {}
  z: { host: c }
  w: { host: b }
transitions:
  t: { host: a, in: w, out: x }
  u: { host: b, in: x, out: z }
  v: { host: a, in: x, out: w }
  s: { host: b, in: w, out: w }
`),
    ).toEqual([
      '1: unknown key "color" (a host has ssh and fspl, or nncp; and a key)',
      '4: Place y has no host: in a net that names hosts, every ' +
        'place and transition says which host it is on (host: NAME)',
      '5: Unknown host "c" (hosts: a, b)',
      '6: Place w is written from hosts a and b: its sequence ' +
        'numbers have one owner, so its writers must be on one host',
      '8: Transition t (host a) reads place w on host b: a transition reads places of its own host only',
      '9: Transition u (host b) reads place x on host a: a transition reads places of its own host only',
    ]);
  });

  test('a host reached through NNCP: node required, one word each, not with ssh; hostConfig fills the handle', () => {
    expect(
      problems(`hosts:
  a: { nncp: { node: alice, cfg: /etc/a.hjson, handle: recv, from: [bob, carol] } }
  b: { nncp: { cfg: /x, from: [] } }
  c: { nncp: { node: "-oops", handle: "two words", colour: 1, from: "two words" } }
  d: { ssh: d, nncp: { node: d } }
  e: { nncp: nope }
places:
  x: { host: a }
transitions:
  t: { host: a, in: x, out: x }
`),
    ).toEqual([
      '3: nncp needs node: the NNCP node of this host, as the sending node names it',
      '3: from is the NNCP nodes this host takes tokens from, a word ' +
        "or a list: their ids, or their names in this host's NNCP config",
      '4: node is one word (an NNCP node name or id)',
      '4: handle is one word (an NNCP exec handle name)',
      '4: unknown key "colour" (nncp has node, cfg, handle and from)',
      '4: from is the NNCP nodes this host takes tokens from, a word ' +
        "or a list: their ids, or their names in this host's NNCP config",
      '5: A host is reached over ssh or through NNCP, not both: give ssh (and fspl) or nncp',
      '6: nncp is a map: { node: NODE, cfg: PATH, handle: HANDLE, from: [NODE...] ' +
        '} (node is the NNCP node to send to; cfg, handle and from are optional)',
    ]);
    const net = parseNetText(
      'hosts: { a: {}, b: { nncp: { node: bob } }, c: { nncp: { node: carol, from: alice } } }\n' +
        'places: { x: { host: a }, y: { host: b }, z: { host: c } }\n' +
        'transitions: { t: { host: a, in: x, out: y }, u: { host: c, in: z, out: z } }\n',
      '/tmp/n/net.yaml',
    );
    expect(hostConfig(net, 'b')).toEqual({
      kind: 'nncp',
      name: 'b',
      nncp: { node: 'bob', handle: 'fspl', cfg: undefined },
    });
    expect(hostConfig(net, 'c')).toMatchObject({ kind: 'nncp', nncp: { node: 'carol', from: ['alice'] } });
    expect(hostConfig(net, 'a')).toEqual({ kind: 'ssh', name: 'a', ssh: ['ssh', 'a'], fspl: undefined });
  });

  test("a host's view: its transitions, its places, outboxes for the places it writes elsewhere", () => {
    const net = parseNetText(
      `places:
  src: { host: a }
  mid: { host: b, sync: true }
  done: { host: a }
  other: { host: b }
transitions:
  ship: { host: a, in: src, out: mid }
  work: { host: b, in: mid, run: [cat], out: done }
  more: { host: b, in: other, out: done }
`,
      '/tmp/n/net.yaml',
    );
    const a = hostView(net, 'a');
    expect([...a.transitions.keys()]).toEqual(['ship']);
    expect([...a.places.keys()]).toEqual(['src', 'mid', 'done']);
    expect(a.stateDir).toBe('/tmp/n/net.state/a');
    expect(a.places.get('mid')!.dir).toBe(path.join('/tmp/n/net.state/a/outbox/mid'));
    expect(a.places.get('mid')!.remote).toEqual({ host: 'b', dir: '/tmp/n/places/mid', sync: true });
    const b = hostView(net, 'b');
    expect([...b.places.keys()]).toEqual(['mid', 'done', 'other']);
    expect(b.places.get('done')!.remote).toMatchObject({ host: 'a', sync: false });
    expect(() => hostView(net, undefined)).toThrow(/say which one this is with --host NAME/);
    expect(() => hostView(net, 'c')).toThrow(/Unknown host "c"/);
  });

  test(
    'a drain waits for the hosts that can still send it ' + 'tokens, looking at the places and outboxes on the way',
    () => {
      const net = parseNetText(
        `places:
  src: { host: a }
  mid: { host: b }
  back: { host: a }
  done: { host: a }
  side: { host: c }
transitions:
  ship: { host: a, in: src, out: mid }
  work: { host: b, in: mid, run: [cat], out: [back, side] }
  finish: { host: a, in: back, out: done }
`,
        '/tmp/n/net.yaml',
      );
      // b reads mid, fed by a from src.
      expect(drainPlan(net, 'b')).toMatchObject({
        upstream: [
          {
            host: 'a',
            activity: '/tmp/n/net.state/a/activity',
            places: [{ place: 'src', dir: '/tmp/n/places/src' }],
            outboxes: [{ place: 'mid', dir: '/tmp/n/net.state/a/outbox/mid' }],
          },
        ],
        ownOutboxes: [],
      });
      // a reads back, fed by b from mid, which a itself feeds: each waits for the other.
      const a = drainPlan(net, 'a');
      expect(a.upstream.map((u) => [u.host, u.places.map((p) => p.place), u.outboxes.map((o) => o.place)])).toEqual([
        ['b', ['mid'], ['back']],
      ]);
      expect(a.ownOutboxes).toEqual(['mid']);
      // c reads nothing: it waits for nobody.
      expect(drainPlan(net, 'c')).toEqual({ upstream: [], ownOutboxes: [], unseen: [] });
    },
  );

  test('judging an upstream host from two looks', () => {
    const u = {
      host: 'a',
      places: [{ place: 'src', dir: '/s' }],
      outboxes: [{ place: 'mid', dir: '/o' }],
    } as unknown as UpstreamHost;
    const at = (activity: string, alive: boolean, places: number[], outboxes: number[]): Look => {
      const [state, , ...counts] = activity.split(' ');
      return {
        activity,
        state: state as Look['state'],
        alive,
        places,
        outboxes,
        idleCounts: new Map(counts.map((c) => [c.split('=')[0]!, Number(c.split('=')[1])])),
      };
    };
    const idle = at('idle r.1 src=2', true, [2], [0]);
    expect(judge(u, idle, idle, idle)).toEqual({ kind: 'quiet' }); // two tokens it can't fire
    expect(judge(u, idle, at('idle r.1 src=2', true, [3], [0]), idle).kind).toBe('wait'); // the looks differ
    expect(judge(u, at('idle r.1 src=2', true, [3], [0]), at('idle r.1 src=2', true, [3], [0]), idle)).toMatchObject({
      kind: 'wait',
      why: expect.stringMatching(/since its run went idle/),
    });
    expect(judge(u, at('busy r.2', true, [2], [0]), at('busy r.2', true, [2], [0]), idle)).toMatchObject({
      kind: 'wait',
      why: 'host a is firing',
    });
    expect(judge(u, at('idle r.3 src=0', true, [0], [4]), at('idle r.3 src=0', true, [0], [4]), idle)).toMatchObject({
      kind: 'wait',
      why: 'host a has 4 tokens in its outbox for mid to send',
    });
    // No run there: tokens left there are waited for, unless its run ended during this drain.
    const never = at('', false, [5], [0]);
    expect(judge(u, never, never, never)).toMatchObject({
      kind: 'wait',
      why: 'no net run on host a, which holds 5 tokens in src',
    });
    const ended = at('ended r.9', false, [0], [3]);
    expect(judge(u, ended, ended, idle)).toEqual({
      kind: 'left',
      tokens: [{ place: 'mid', where: 'outbox', count: 3 }],
    });
    expect(judge(u, at('ended r.9', false, [0], [0]), at('ended r.9', false, [0], [0]), idle)).toEqual({
      kind: 'quiet',
    });
  });
});
