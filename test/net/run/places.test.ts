/**
 * RunPlaces (src/net/run/places.ts) keeps each and-merge's join up to date as tokens are indexed,
 * claimed, freed, consumed and gone, and shows the scheduler only the head of each place.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defineNet } from 'filespooler';
import { expect, test } from 'vitest';
import { silentLogger } from '../../../src/base/log.js';
import { RunPlaces } from '../../../src/net/run/places.js';
import { makeHeader } from '../../../src/packet/prepare.js';
import { netDir } from '../helpers.js';

/** No open firing holds anything (as heldBy with none). */
const nothingHeld = (_place: string, next: bigint) => ({ next, claimed: 0, incoming: 0 });

function setup(pairs: number) {
  const net = defineNet({
    dir: netDir(),
    places: { l: {}, r: {}, o: {} },
    transitions: { m: { in: ['l', 'r'], out: 'o', run: null, workers: 2 } },
  });
  const places = new RunPlaces(net, [...net.transitions.values()], {});
  places.open();
  const key = (k: string) => ({ env: [[Buffer.from('KEY'), Buffer.from(k)]] as Array<[Uint8Array, Uint8Array]> });
  // r in reverse key order, so that the sets come in l's order, not r's.
  for (let i = pairs - 1; i >= 0; i--) places.get('r')!.putNow(key(`k${i}`));
  for (let i = 0; i < pairs; i++) places.get('l')!.putNow(key(`k${i}`));
  places.get('l')!.putNow(key('lonely'));
  return { net, places, m: net.transitions.get('m')! };
}

const keysOf = (sets: Array<Array<{ key: string }>>) => sets.map((s) => s[0]!.key);

test(
  'the join finds the sets by key after a scan; a claim ' +
    'takes a set out, a release puts it back, a consume does not',
  async () => {
    const { places, m } = setup(100);
    await places.refresh(true, silentLogger);
    let v = places.mergeView(m)!;
    expect(v.complete).toBe(100);
    expect(keysOf(v.sets)).toEqual(['k0', 'k1']); // as many as the transition's workers
    const [first] = v.sets;
    places.claim(first!);
    v = places.mergeView(m)!;
    expect(v.complete).toBe(99);
    expect(keysOf(v.sets)).toEqual(['k1', 'k2']);
    // The marking shows the head of each place (lookahead), claimed tokens left out.
    const l = places.placeState('l', nothingHeld);
    expect(l.tokens.length).toBeLessThan(101);
    expect(l.tokens.some((t) => t.key === 'k0')).toBe(false);
    for (const t of first!) places.release(t);
    expect(keysOf(places.mergeView(m)!.sets)).toEqual(['k0', 'k1']);
    expect(places.placeState('l', nothingHeld).tokens[0]!.key).toBe('k0');
    // Claimed, then consumed: the set stays gone.
    places.claim(first!);
    for (const t of first!) {
      fs.unlinkSync(t.path);
      places.get(t.place)!.forget(t.filename);
      places.consumed(t);
    }
    expect(places.mergeView(m)!.complete).toBe(99);
    expect(keysOf(places.mergeView(m)!.sets)).toEqual(['k1', 'k2']);
    places.close();
  },
);

test(
  'a token gone from the directory (another reader, a hand) ' +
    'leaves the join at the next scan; one arriving joins it',
  async () => {
    const { places, m } = setup(5);
    await places.refresh(true, silentLogger);
    const [set] = places.mergeView(m)!.sets;
    fs.unlinkSync(set![1]!.path); // k0's token in r
    places.get('r')!.markDirty();
    await places.refresh(false, silentLogger);
    expect(places.mergeView(m)!.complete).toBe(4);
    expect(keysOf(places.mergeView(m)!.sets)).toEqual(['k1', 'k2']);
    places.get('r')!.putNow({ env: [[Buffer.from('KEY'), Buffer.from('lonely')]] });
    places.get('r')!.markDirty();
    await places.refresh(false, silentLogger);
    expect(places.mergeView(m)!.complete).toBe(5);
    places.close();
  },
);

test(
  'outputs a scan found before the run adopted them stay ' + 'one token each in the join: consumed, their set is gone',
  async () => {
    const net = defineNet({
      dir: netDir(),
      places: { l: {}, r: {}, o: {} },
      transitions: { m: { in: ['l', 'r'], out: 'o', run: null } },
    });
    const m = net.transitions.get('m')!;
    const places = new RunPlaces(net, [...net.transitions.values()], {});
    places.open();
    const env: Array<[Uint8Array, Uint8Array]> = [[Buffer.from('KEY'), Buffer.from('k0')]];
    const written = ['l', 'r'].map((name) => {
      const p = places.get(name)!;
      const { seq, filename } = p.putNow({ env });
      return { name, seq, file: path.join(p.queue.jobsDir, filename) };
    });
    // The scan comes between the commit's renames and the run applying the commit's result.
    await places.refresh(true, silentLogger);
    for (const w of written)
      places.published(
        { place: w.name, seq: w.seq, temp: `${w.file}.part`, final: w.file },
        makeHeader({ seq: w.seq, cmd: { kind: 'Command', params: [], env } }),
        Date.now(),
      );
    expect(places.mergeView(m)!.complete).toBe(1);
    const [set] = places.mergeView(m)!.sets;
    places.claim(set!);
    for (const t of set!) {
      fs.unlinkSync(t.path);
      places.get(t.place)!.forget(t.filename);
      places.consumed(t);
    }
    expect(places.mergeView(m)!.complete).toBe(0);
    expect(places.mergeView(m)!.sets).toEqual([]);
    places.close();
  },
);
