/** Nets on several hosts: the checks on hosts, and the view one host runs. */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { parseNetText } from 'filespooler';
import { hostView } from '../../src/net/hosts.js';

const problems = (yaml: string): string[] => {
  try {
    parseNetText(yaml, '/tmp/n/net.yaml');
    return [];
  } catch (err) {
    return (err as { problems: Array<{ line: number; message: string }> }).problems.map((p) => `${p.line}: ${p.message}`);
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
      '1: unknown key "color" (a host has ssh and fspl)',
      '4: Place y has no host: in a net that names hosts, every place and transition says which host it is on (host: NAME)',
      '5: Unknown host "c" (hosts: a, b)',
      '8: Transition t (host a) reads place w on host b: a transition reads places of its own host only',
      '9: Transition u (host b) reads place x on host a: a transition reads places of its own host only',
      '6: Place w is written from hosts a and b: its sequence numbers have one owner, so its writers must be on one host',
    ]);
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
    expect(a.places.get('mid')!.extra.remote).toEqual({ host: 'b', dir: '/tmp/n/places/mid', sync: true });
    const b = hostView(net, 'b');
    expect([...b.places.keys()]).toEqual(['mid', 'done', 'other']);
    expect(b.places.get('done')!.extra.remote).toMatchObject({ host: 'a', sync: false });
    expect(() => hostView(net, undefined)).toThrow(/say which one this is with --host NAME/);
    expect(() => hostView(net, 'c')).toThrow(/Unknown host "c"/);
  });
});
