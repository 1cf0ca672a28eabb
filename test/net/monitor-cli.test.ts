/** `fspl net status --json` with and without a run, and `fspl net dot --svg/--live`. */
import { describe, expect, test } from 'vitest';
import { makeNet, runFspl, sleep, spawnFspl } from './helpers.js';

const NET = `
places:
  inbox: {}
  done: {}
  stuckhere: {}
transitions:
  move: { in: inbox, out: done, run: [cat] }
`;

type Json = {
  state: string;
  live: boolean;
  places: Array<{ name: string; tokens: number; oldestAgeMs?: number; stuck: number }>;
  transitions: Array<{
    name: string;
    fired: number;
    perMinute1: number;
    perMinute15: number;
    meanServiceMs?: number;
    p95ServiceMs?: number;
    sinceLastFiredMs?: number;
    failing: boolean;
  }>;
};

describe('net status --json', () => {
  test('live figures from the running net, then from the directories once it stops', { timeout: 60_000 }, async () => {
    const { file, net } = makeNet(NET);
    for (let i = 0; i < 5; i++) await net.put('inbox', Buffer.from(`t${i}`));
    const run = spawnFspl(['net', 'run', file]);
    let j: Json | undefined;
    for (let i = 0; i < 200; i++) {
      const r = await runFspl(['net', 'status', '--json', file]);
      j = JSON.parse(r.stdout) as Json;
      if (j.live && j.transitions[0]!.fired === 5) break;
      await sleep(100);
    }
    expect(j!.live).toBe(true);
    const t = j!.transitions[0]!;
    expect(t).toMatchObject({ name: 'move', fired: 5, perMinute1: 5, failing: false });
    expect(t.perMinute15).toBeCloseTo(5 / 15, 10);
    expect(t.meanServiceMs).toBeGreaterThan(0);
    expect(t.p95ServiceMs).toBeGreaterThan(0);
    expect(t.sinceLastFiredMs).toBeGreaterThanOrEqual(0);
    const done = j!.places.find((p) => p.name === 'done')!;
    expect(done.tokens).toBe(5);
    expect(done.oldestAgeMs).toBeGreaterThanOrEqual(0);
    run.kill('SIGTERM');
    await new Promise((r) => run.once('exit', r));
    const after = JSON.parse((await runFspl(['net', 'status', '--json', file])).stdout) as Json;
    expect(after.live).toBe(false);
    expect(after.transitions[0]).toMatchObject({ fired: 5, perMinute1: 0, perMinute15: 0 });
    expect(after.state).toBe('drained');
  });
});

describe('net dot --svg and --live', () => {
  test('SVG drawn in-process; --live colours by the state', async () => {
    const { file, net } = makeNet(NET);
    await net.put('inbox', Buffer.from('x'));
    const svg = await runFspl(['net', 'dot', '--svg', file]);
    expect(svg.status).toBe(0);
    expect(svg.stdout).toMatch(/^<\?xml[\s\S]*<svg[\s\S]*id="place&#45;inbox"[\s\S]*<\/svg>\n?$/);
    const live = await runFspl(['net', 'dot', '--live', file]);
    expect(live.stdout).toContain('label="inbox\\n1 token", id="place-inbox", style=filled, fillcolor="#e8f0ff"');
    expect(live.stdout).toContain('label="done\\n0 tokens"');
    const both = await runFspl(['net', 'dot', '--live', '--svg', file]);
    expect(both.stdout).toContain('#e8f0ff');
  });
});
