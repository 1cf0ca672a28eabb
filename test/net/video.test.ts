/** The video pipeline of the pmjq paper (docs/nets/video), 100 clips end to end. */
import fs from 'node:fs';
import path from 'node:path';
import { Net } from 'filespooler';
import { expect, test } from 'vitest';
import { netDir, tokensIn } from './helpers.js';

const EXAMPLE = path.resolve(__dirname, '../../docs/nets/video');

test('the video net runs 100 clips: decode, split, xor triage, stabilize or pass, mux by key', async () => {
  const dir = netDir();
  fs.cpSync(EXAMPLE, dir, { recursive: true });
  const net = Net.load(path.join(dir, 'video.yaml'));
  net.init();
  for (let i = 1; i <= 100; i++) {
    const shake = i % 3 === 0 ? ' shake' : '';
    await net.put(
      'inbox',
      Buffer.from(`frame 1 of clip${i}${shake}\nframe 2 of clip${i}${shake}\naudio track of clip${i}\n`),
      { key: `clip${i}` },
    );
  }
  const summary = await net.run({ drain: true });
  expect(summary.leftovers).toEqual([]);
  const done = await tokensIn(path.join(dir, 'places/done'));
  expect(done.map((t) => t.key).sort()).toEqual(Array.from({ length: 100 }, (_, i) => `clip${i + 1}`).sort());
  for (const t of done) {
    const i = t.key.slice(4);
    const shaky = Number(i) % 3 === 0;
    const frame = (n: number) => `FRAME ${n} OF CLIP${i}${shaky ? ' (stabilized)' : ''}`;
    expect(t.payload).toBe(`clip ${t.key}\n${frame(1)}\n${frame(2)}\nAUDIO TRACK OF CLIP${i}\n`);
  }
  expect(await tokensIn(path.join(dir, 'places/failed'))).toEqual([]);
  const status = await net.status();
  expect(status.state).toBe('drained');
  expect(status.transitions.find((t) => t.name === 'stabilize')!.fired).toBe(33);
  expect(status.transitions.find((t) => t.name === 'pass')!.fired).toBe(67);
}, 300_000);
