#!/usr/bin/env node
/**
 * JavaScript moves (issue 20's row, alone): a `fn` transition `a -> b` handing its input's
 * payload on, through the library (`Net.run({ drain: true })`), durable commits. In a fresh
 * process, ROUNDS runs one after the other, each on a new net of N tokens in DIR (put before, not
 * timed): the first is what a short script gets (V8 still compiling the runner's code while it
 * runs), the last what a long-lived process gets once V8 has optimised it.
 *
 *   node bench/js-moves.mjs DIR [N] [ROUNDS]   prints {"cold": moves/s, "warm": moves/s, "rounds": [...]}
 *
 * Needs `npm run build` first.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const [DIR, N0 = '3000', R0 = '4'] = process.argv.slice(2);
if (!DIR) {
  process.stderr.write('usage: node bench/js-moves.mjs DIR [N] [ROUNDS]\n');
  process.exit(2);
}
const N = Number(N0);
const { Net } = await import(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href);

const fn = async (c) => {
  let text = '';
  for await (const chunk of c.inputs[0].payload()) text += chunk;
  return text;
};

async function round() {
  const dir = fs.mkdtempSync(path.join(DIR, 'fspl-js-moves-'));
  try {
    const net = Net.define({ dir, places: { a: {}, b: {} }, transitions: { t: { in: 'a', out: 'b', fn } } });
    net.init();
    for (let i = 0; i < N; i++) await net.put('a', Buffer.from(`${i}\n`), { key: `k${i}` });
    const t0 = performance.now();
    await net.run({ drain: true });
    const wall = performance.now() - t0;
    const got = fs.readdirSync(path.join(dir, 'places/b/jobs')).filter((n) => n.endsWith('.fspl')).length;
    if (got !== N) throw new Error(`JavaScript moves: ${got} tokens in b, not ${N}`);
    return N / (wall / 1000);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const rounds = [];
for (let r = 0; r < Number(R0); r++) rounds.push(await round());
process.stdout.write(`${JSON.stringify({ cold: rounds[0], warm: rounds.at(-1), rounds })}\n`);
