/**
 * `net status`: stuck means stuck. A token whose partner (number, room, batch, resume) can still
 * come from a token or an open firing upstream is waiting, not stuck: after a run stopped while
 * tokens were in flight, and during a healthy run, status exits 0, /metrics says 0 stuck tokens,
 * and `net run --drain` finishes them; what nothing can bring is still stuck (exit 3). And a user
 * who may read the net but not write it gets a clean status, the permission said once in words.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { serveNet } from '../../../src/net/observe/serve.js';
import { copyBuild } from '../../build-copy.js';
import { describeIfPresent } from '../../gate.js';
import { onPath } from '../../harness/proc.js';
import { makeNet, runFspl, sleep, spawnFspl, tokensIn } from '../helpers.js';

/** An and-merge whose second input comes through a slow transition (fast once the file `go` exists). */
const NET = `
places: { in: {}, a: {}, b1: {}, b2: {}, done: {} }
transitions:
  split: { in: in, out: [a, b1] }
  slow: { in: b1, run: 'if [ ! -e go ]; then sleep 30; fi; cat', out: b2 }
  mux: { in: [a, b2], run: 'cat "$FSPL_IN_a" "$FSPL_IN_b2"', out: done }
`;

interface StatusJson {
  state: string;
  live: boolean;
  stuck: Array<{ place: string; key: string; code: string }>;
  waiting: Array<{ place: string; key: string; code: string; on?: string[] }>;
  places: Array<{ name: string; tokens: number; stuck: number; problem?: string }>;
  transitions: Array<{ name: string; running: number; waitingMerges: number }>;
  notes?: Array<{ code: string; text: string }>;
}

/** The JSON alone, while it changes. */
async function statusJson(file: string): Promise<StatusJson> {
  return JSON.parse((await runFspl(['net', 'status', file, '--json'])).stdout) as StatusJson;
}

/** Text and JSON, once the state holds still. */
async function status(file: string): Promise<{ exit: number | null; json: StatusJson; text: string }> {
  const t = await runFspl(['net', 'status', file]);
  const j = await runFspl(['net', 'status', file, '--json']);
  expect(j.status).toBe(t.status);
  return { exit: t.status, json: JSON.parse(j.stdout) as StatusJson, text: t.stdout };
}

describe('stuck or waiting', () => {
  test('partners still upstream: waiting (exit 0), and --drain ' +
    'finishes them; what nothing can bring is stuck (exit 3)', async () => {
    const { dir, file, net } = makeNet(NET);
    fs.writeFileSync(path.join(dir, 'go'), '');
    // As a run stopped in the middle leaves them: k1's audio half in a, its other half upstream in b1.
    await net.put('a', Buffer.from('A1'), { key: 'k1' });
    await net.put('b1', Buffer.from('B1'), { key: 'k1' });
    await net.put('a', Buffer.from('A2'), { key: 'lonely' });
    const before = await status(file);
    expect(before.exit).toBe(0);
    expect(before.json.state).toBe('idle');
    expect(before.json.stuck).toEqual([]);
    expect(before.json.waiting.map((l) => [l.place, l.key, l.code, l.on])).toEqual([
      ['a', 'k1', 'no-partner', ['b2']],
      ['a', 'lonely', 'no-partner', ['b2']],
    ]);
    expect(before.json.places.find((p) => p.name === 'a')!.stuck).toBe(0);
    expect(before.json.transitions.find((t) => t.name === 'mux')!.waitingMerges).toBe(2);
    expect(before.text).not.toMatch(/can't fire/);
    expect(before.text).toMatch(
      /\n2 tokens wait for what can still come:\n {2}a #1 key k1: no partner with key "k1" in b2 \(for mux\)\n/,
    );

    // The drain pairs k1; lonely's partner can't come from anywhere now: stuck, for both.
    const drain = await runFspl(['net', 'run', file, '--drain', '-l', 'error']);
    expect(drain.status).toBe(3);
    expect(drain.stderr).toMatch(/1 token can never fire:\n {2}a #2 key lonely: no partner with key "lonely" in b2/);
    expect((await tokensIn(path.join(dir, 'places/done'))).map((t) => t.key)).toEqual(['k1']);
    const after = await status(file);
    expect(after.exit).toBe(3);
    expect(after.json.state).toBe('stuck');
    expect(after.json.stuck.map((l) => [l.place, l.key, l.code])).toEqual([['a', 'lonely', 'no-partner']]);
    expect(after.json.waiting).toEqual([]);
    expect(after.text).toMatch(/\n1 token can't fire:\n {2}a #2 key lonely: /);
  }, 60_000);

  test('a healthy run and a run stopped in flight: waiting, 0 ' +
    'stuck in /metrics, and --drain finishes them all (exit 0)', async () => {
    const { dir, file, net } = makeNet(NET);
    await net.put('in', Buffer.from('x'), { key: 'k1' });
    await net.put('in', Buffer.from('y'), { key: 'k2' });
    const run = spawnFspl(['net', 'run', file, '--stop-timeout', '1']);
    for (let i = 0; i < 300; i++) {
      const j = await statusJson(file);
      if (
        j.live &&
        j.transitions.find((t) => t.name === 'slow')!.running > 0 &&
        j.places.find((p) => p.name === 'a')!.tokens === 2
      )
        break;
      await sleep(100);
    }
    // Stable now, for 30 s: slow sleeps.
    const live = await status(file);
    expect(live.json.transitions.find((t) => t.name === 'slow')!.running).toBe(1);
    expect(live.exit).toBe(0);
    expect(live.json.state).toBe('running');
    expect(live.json.stuck).toEqual([]);
    expect(live.json.waiting.map((l) => [l.key, l.code])).toEqual([
      ['k1', 'no-partner'],
      ['k2', 'no-partner'],
    ]);
    const server = await serveNet(net.model, { port: 0 });
    try {
      const metrics = await (await fetch(`${server.url}metrics`)).text();
      expect(metrics).toMatch(/\nfspl_net_stuck_tokens 0\n/);
      expect(metrics).toMatch(/\nfspl_net_state\{state="stuck"\} 0\n/);
    } finally {
      await server.close();
    }

    // Stopped while slow runs: its firing is abandoned, its tokens stay upstream in b1.
    run.kill('SIGTERM');
    expect(await new Promise((r) => run.once('exit', r))).toBe(0);
    const stopped = await status(file);
    expect(stopped.json.live).toBe(false);
    expect(stopped.exit).toBe(0);
    expect(stopped.json.state).toBe('idle');
    expect(stopped.text).toMatch(/^net .*: idle \(no run going\)\n/);
    expect(stopped.json.stuck).toEqual([]);
    expect(stopped.json.waiting.map((l) => [l.place, l.key])).toEqual([
      ['a', 'k1'],
      ['a', 'k2'],
    ]);

    fs.writeFileSync(path.join(dir, 'go'), '');
    const drain = await runFspl(['net', 'run', file, '--drain', '-l', 'error']);
    expect([drain.status, drain.stderr]).toEqual([0, '']);
    expect((await tokensIn(path.join(dir, 'places/done'))).map((t) => t.key).sort()).toEqual(['k1', 'k2']);
    expect((await status(file)).json.state).toBe('drained');
  }, 90_000);

  test('a paused transition holds its tokens waiting, not stuck; a stopped one holds them stuck', async () => {
    const { file, net } = makeNet(`
places: { in: {}, out: {}, in2: {} }
transitions:
  t: { in: in, run: [cat], out: out }
  bad: { in: in2, run: 'exit 1', out: out }
`);
    await net.put('in', Buffer.from('x'), { key: 'k' });
    net.pause('t', { reason: 'upgrade', by: 'tester' });
    const paused = await status(file);
    expect(paused.exit).toBe(0);
    expect(paused.json.state).toBe('idle');
    expect(paused.json.stuck).toEqual([]);
    expect(paused.json.waiting.map((l) => [l.key, l.code])).toEqual([['k', 'paused']]);

    await net.put('in2', Buffer.from('y'), { key: 'doomed' });
    const run = spawnFspl(['net', 'run', file]);
    for (let i = 0; i < 200 && (await statusJson(file)).state !== 'stuck'; i++) await sleep(100);
    const st = await status(file);
    expect(st.exit).toBe(3);
    expect(st.json.stuck.map((l) => [l.key, l.code])).toEqual([['doomed', 'stopped']]);
    expect(st.json.waiting.map((l) => [l.key, l.code])).toEqual([['k', 'paused']]);
    run.kill('SIGTERM');
    await new Promise((r) => run.once('exit', r));
  }, 60_000);
});

const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

describeIfPresent(
  'a user who may read the net but not write it',
  isRoot && !onPath('setpriv') ? ['setpriv (to run the CLI as nobody)'] : [],
  { what: 'read-only status test' },
  () => {
    let build = '';
    afterAll(() => {
      if (build !== '') fs.rmSync(build, { recursive: true, force: true });
    });

    /** As nobody when root (root ignores permission bits); as ourselves, with the lock files read-only, otherwise. */
    async function readOnlyStatus(
      file: string,
      json: boolean,
    ): Promise<{ status: number; stdout: string; stderr: string }> {
      const args = ['net', 'status', file, ...(json ? ['--json'] : [])];
      if (!isRoot) {
        const r = await runFspl(args);
        return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
      }
      build ||= copyBuild();
      try {
        const stdout = execFileSync(
          'setpriv',
          [
            `--reuid=${NOBODY}`,
            `--regid=${NOBODY}`,
            '--clear-groups',
            '--',
            process.execPath,
            path.join(build, 'bin', 'fspl'),
            ...args,
          ],
          { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
        );
        return { status: 0, stdout, stderr: '' };
      } catch (err) {
        const e = err as { status: number; stdout: string; stderr: string };
        return { status: e.status, stdout: e.stdout, stderr: e.stderr };
      }
    }

    test('a clean status: no raw EACCES in the places, the permission said once', async () => {
      const { dir, file, net } = makeNet(`
places: { inbox: {}, work: {}, done: {} }
transitions:
  one: { in: inbox, run: [cat], out: work }
  two: { in: work, run: [cat], out: done }
`);
      fs.chmodSync(dir, 0o755);
      for (let i = 0; i < 3; i++) await net.put('inbox', Buffer.from(`t${i}`), { key: `k${i}` });
      if (!isRoot)
        for (const p of ['inbox', 'work', 'done']) fs.chmodSync(path.join(dir, 'places', p, 'nextseq.lock'), 0o444);
      const text = await readOnlyStatus(file, false);
      expect(text.stderr).toBe('');
      expect(text.status).toBe(0);
      expect(text.stdout).not.toMatch(/EACCES|permission denied, open/);
      const notes = text.stdout.split('\n').filter((l) => l.startsWith('note: '));
      expect(notes).toEqual([
        expect.stringMatching(
          new RegExp(
            /^note: user \S+ may read this net but not lock its places \(nextseq\.lock: /.source +
              /Permission denied\), so their next numbers were read without the lock$/.source,
          ),
        ),
      ]);
      // The NOTE column of every place is empty, and the counts are all there.
      const rows = text.stdout.split('\n').filter((l) => /^(inbox|work|done) /.test(l));
      expect(rows.map((l) => l.trim().split(/\s+/))).toEqual([
        ['inbox', 'source', '3', expect.stringMatching(/s$/), '-'],
        ['work', 'inner', '0', '-', '-'],
        ['done', 'sink', '0', '-', '-'],
      ]);
      const json = JSON.parse((await readOnlyStatus(file, true)).stdout) as StatusJson;
      expect(json.places.map((p) => p.problem)).toEqual([undefined, undefined, undefined]);
      expect(json.notes).toEqual([
        { code: 'read-only', text: expect.stringContaining('may read this net but not lock its places') },
      ]);
      expect(json.state).toBe('idle');
    }, 60_000);
  },
);
