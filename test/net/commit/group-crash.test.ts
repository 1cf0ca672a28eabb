/**
 * Exactly-once under kill -9, on the group commit's path (commit.ts): groups of one (one firing at
 * a time) and groups of up to 64 (moves, which finish at once), the runner killed at random
 * moments and, two times in three, at the worst one: right after a group's journal line is fsynced,
 * before any of its outputs is renamed (commitProbe). Each such kill must be finished by the next
 * run's recovery (all of the group's commits, no more), and in the end every key reaches the sink
 * once, whole, its numbers without gap, no place left holding a stray file.
 *
 * The runner runs in a child process (the built library, dist/: `npm run build` first).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT, rng } from '../../helpers.js';
import { makeNet, sleep, tokensIn } from '../helpers.js';

/** The child: a drain of the net, killing itself (SIGKILL) once its `killAt`-th group is recorded. */
const CHILD = `
import fs from 'node:fs';
const [lib, file, workers, killAt, sizes] = process.argv.slice(2);
const { Net } = await import(lib);
let groups = 0;
let started = false;
await Net.load(file).run({
  drain: true,
  workers: Number(workers),
  onEvent: (e) => {
    if (e.type === 'recovered') fs.appendFileSync(sizes, 'recovered ' + e.commits + '\\n');
    else if (e.type === 'start' && !started) fs.appendFileSync(sizes, 'started\\n');
    started = true;
  },
  commitProbe: (size) => {
    fs.appendFileSync(sizes, 'group ' + size + '\\n');
    if (++groups === Number(killAt)) process.kill(process.pid, 'SIGKILL');
  },
});
`;

interface Seen {
  kills: number;
  probeKills: number;
  /** Sizes of the groups recorded right before a kill. */
  killedGroups: number[];
  largest: number;
  recovered: number;
  /** Recoveries seen to finish exactly the group recorded before the kill. */
  checked: number;
}

async function crashRun(yaml: string, tokens: number, workers: number, kills: number): Promise<Seen> {
  const { dir, file, net } = makeNet(yaml);
  for (let i = 0; i < tokens; i++) await net.put('src', Buffer.from(`p${i}\n`), { key: `k${i}` });
  const child = path.join(dir, 'child.mjs');
  fs.writeFileSync(child, CHILD);
  const lib = path.join(ROOT, 'dist', 'index.js');
  const seed = Number(process.env.FSPL_CRASH_SEED ?? Date.now() % 100000);
  const random = rng(seed);
  const seen: Seen = { kills: 0, probeKills: 0, killedGroups: [], largest: 0, recovered: 0, checked: 0 };
  let lastGroup: number | undefined;
  for (let round = 0; round < 400; round++) {
    const log = path.join(dir, `log-${round}`);
    fs.writeFileSync(log, '');
    const killing = seen.kills < kills;
    // Two kills in three at a group's recording (1st to 8th group of the run: a run that gets
    // there has told what its recovery did), the third at a random moment.
    const atProbe = killing && round % 3 !== 2;
    const killAt = atProbe ? 1 + Math.floor(random() * 8) : 0;
    const c = spawn(process.execPath, [child, lib, file, String(workers), String(killAt), log], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    c.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      c.on('exit', (code, signal) => resolve({ code, signal })),
    );
    const timer =
      killing && !atProbe ? sleep(300 + random() * 600).then(() => 'timeout' as const) : new Promise<never>(() => {});
    const r = await Promise.race([exited, timer]);
    if (r === 'timeout') {
      c.kill('SIGKILL');
      await exited;
    }
    const lines = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
    const recovered = lines.find((l) => l.startsWith('recovered '));
    // The last run was killed right after recording a group: this run's recovery finished exactly
    // that group (unless this run was killed before it could tell: nothing in its log).
    if (lastGroup !== undefined && lines.length > 0) {
      expect(recovered, `seed ${seed}: recovery after a kill at a recorded group`).toBe(`recovered ${lastGroup}`);
      seen.checked++;
    }
    if (recovered) seen.recovered++;
    const groups = lines.filter((l) => l.startsWith('group ')).map((l) => Number(l.slice(6)));
    for (const g of groups) seen.largest = Math.max(seen.largest, g);
    lastGroup = undefined;
    if (r !== 'timeout' && r.signal === 'SIGKILL') {
      seen.kills++;
      seen.probeKills++;
      lastGroup = groups[groups.length - 1];
      seen.killedGroups.push(lastGroup!);
      continue;
    }
    if (r === 'timeout') {
      seen.kills++;
      continue;
    }
    expect(r.code, `seed ${seed}: ${stderr}`).toBe(0);
    if (!killing) break;
    if ((await tokensIn(path.join(dir, 'places/sink'))).filter((t) => t.kind === 'Command').length >= tokens) {
      // Drained before all the kills were made: more tokens to work on.
      for (let i = 0; i < tokens; i++) await net.put('src', Buffer.from(`p${i}\n`), { key: `k${i}` });
    }
  }
  const sink = await tokensIn(path.join(dir, 'places/sink'));
  const got = sink.filter((t) => t.kind === 'Command');
  const perKey = new Map<string, number>();
  for (const t of got) {
    perKey.set(t.key, (perKey.get(t.key) ?? 0) + 1);
    expect(t.payload, `seed ${seed}`).toBe(`p${t.key.slice(1)}\n`);
  }
  // Each key as many times as it was put (once per batch of puts), never more, never less.
  const rounds = got.length / tokens;
  expect(Number.isInteger(rounds), `seed ${seed}: ${got.length} tokens in the sink for ${tokens} keys`).toBe(true);
  for (let i = 0; i < tokens; i++) expect(perKey.get(`k${i}`), `seed ${seed}: key k${i}`).toBe(rounds);
  expect(
    sink.map((t) => t.seq),
    `seed ${seed}: the sink's numbers`,
  ).toEqual(Array.from({ length: sink.length }, (_, i) => BigInt(i + 1)));
  for (const p of fs.readdirSync(path.join(dir, 'places')).filter((n) => n !== 'sink'))
    expect(fs.readdirSync(path.join(dir, 'places', p, 'jobs')), `seed ${seed}: ${p}`).toEqual([]);
  expect(fs.readdirSync(path.join(dir, 'places/sink/jobs')).filter((n) => !/^fspl-.*\.fspl$/.test(n))).toEqual([]);
  expect(fs.readdirSync(path.join(dir, 'net.state/staging'))).toEqual([]);
  console.log(
    `group kill -9 test (seed ${seed}): ${seen.kills} kills (${seen.probeKills} right after a ` +
      `group was recorded, of ${seen.killedGroups.join(' ')}), ${seen.recovered} recoveries (` +
      `${seen.checked} of them checked to finish the killed group), largest group ${seen.largest}`,
  );
  return seen;
}

describe('exactly once under kill -9, commits in groups', () => {
  test('groups of one: a command, one worker, one transition; ' +
    'killed at random and right after a group is recorded', async () => {
    const seen = await crashRun(
      `places: { src: {}, sink: {} }\ntransitions:\n  a: { in: src, out: sink, run: 'sleep 0.1; cat' }\n`,
      30,
      1,
      16,
    );
    expect(seen.checked).toBeGreaterThanOrEqual(3);
    // A firing takes longer than a commit: each group holds one firing (but for a slow fsync now and then).
    expect(seen.killedGroups.filter((n) => n === 1).length).toBeGreaterThanOrEqual(3);
  }, 600_000);

  test('groups of up to 64: moves, 64 workers; killed at random and right after a group is recorded', async () => {
    const seen = await crashRun(
      `places: { src: {}, mid: {}, sink: {} }\ntransitions:\n` +
        `  a: { in: src, out: mid, workers: 64, run: null }\n` +
        `  b: { in: mid, out: sink, workers: 64, run: null }\n`,
      1500,
      64,
      16,
    );
    expect(seen.checked).toBeGreaterThanOrEqual(3);
    expect(seen.largest).toBe(64);
    expect(seen.killedGroups.filter((n) => n > 1).length).toBeGreaterThanOrEqual(3);
  }, 600_000);
});
