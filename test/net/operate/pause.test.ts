/**
 * `net pause` / `net resume`: a paused transition starts no new firing (its running ones finish),
 * stays paused across a restart, shows in status, --json and /metrics, and `net run --drain`
 * reports what it holds as leftovers with the pause's reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { NetEvent } from 'filespooler';
import { netMetricsText, netStatusJson } from 'filespooler/net';
import { describe, expect, test } from 'vitest';
import { makeNet, netDir, runFspl, sleep, tokensIn } from '../helpers.js';

const SLOW = `
places: { in: {}, out: {} }
transitions:
  slow: { in: in, run: 'sleep 0.2; cat', out: out, workers: 4 }
`;

async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await cond()) return;
    await sleep(50);
  }
  throw new Error(`never: ${what}`);
}

describe('net pause', () => {
  test('paused while 4 workers run: the running ones finish, ' +
    'no new firing starts; resumed, everything drains', async () => {
    const { dir, net } = makeNet(SLOW);
    for (let i = 0; i < 40; i++) await net.put('in', Buffer.from(`t${i}\n`), { key: `k${i}` });
    let starts = 0;
    let ends = 0;
    const controller = new AbortController();
    const running = net.run({
      workers: 4,
      signal: controller.signal,
      onEvent: (e: NetEvent) => {
        if (e.type === 'start') starts++;
        if (e.type === 'commit' || e.type === 'fail') ends++;
      },
    });
    await until(() => starts >= 4, 'four firings started');
    net.pause('slow', { reason: 'disk full', by: 'tester' });
    // The runner looks within a second; the firings it had started finish.
    await sleep(1200);
    await until(() => starts === ends, 'the running firings finished');
    const paused = starts;
    const status = await net.status();
    expect(status.transitions[0]!.paused).toMatchObject({ by: 'tester', reason: 'disk full' });
    expect(status.transitions[0]!.paused!.text).toMatch(/^paused since \d{4}-.*Z by tester: disk full$/);
    expect(netMetricsText(status)).toMatch(/fspl_net_transition_paused\{transition="slow"\} 1/);
    expect(JSON.stringify(netStatusJson(status))).toContain('"reason":"disk full"');
    // Sampled: nothing more starts while it is paused.
    for (let i = 0; i < 10; i++) {
      await sleep(100);
      expect(starts).toBe(paused);
    }
    expect((await tokensIn(path.join(dir, 'places/out'))).length).toBe(paused);
    expect(paused).toBeLessThan(40);
    expect(net.resume('slow')?.reason).toBe('disk full');
    expect(net.resume('slow')).toBeUndefined();
    await until(async () => (await tokensIn(path.join(dir, 'places/out'))).length === 40, 'everything drained');
    controller.abort();
    await running;
    expect(starts).toBe(40);
  }, 60_000);

  test('stays paused across a restart; --drain lists what it holds with the reason; resumed, it drains', async () => {
    const { dir, file, net } = makeNet(SLOW);
    for (let i = 0; i < 3; i++) await net.put('in', Buffer.from(`t${i}\n`), { key: `k${i}` });
    const p = await runFspl(['net', 'pause', file, 'slow', '--reason', 'waiting for the fix']);
    expect(p.status, p.stderr).toBe(0);
    expect(p.stdout).toMatch(/^slow paused since .* by .*: waiting for the fix\n$/);
    for (const round of [1, 2]) {
      const r = await runFspl(['net', 'run', file, '--drain', '-l', 'error']);
      expect(r.status, `run ${round}: ${r.stderr}`).toBe(3);
      expect(r.stderr).toMatch(
        /3 tokens can never fire:\n {2}in #1 key k0: held by slow, paused since .* by .*: waiting for the fix\n/,
      );
      expect((await tokensIn(path.join(dir, 'places/in'))).length).toBe(3);
    }
    const st = await runFspl(['net', 'status', file]);
    expect(st.stdout).toMatch(/slow .*paused since .*: waiting for the fix/);
    const json = await runFspl(['net', 'status', file, '--json']);
    expect(JSON.parse(json.stdout).transitions[0].paused.reason).toBe('waiting for the fix');
    const r = await runFspl(['net', 'resume', file, 'slow']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^slow resumed \(it was paused since/);
    expect((await runFspl(['net', 'run', file, '--drain'])).status).toBe(0);
    expect((await tokensIn(path.join(dir, 'places/out'))).map((t) => t.key)).toEqual(['k0', 'k1', 'k2']);
    expect(net.pauses()).toEqual([]);
  }, 60_000);

  test('--kill: a running firing is abandoned, its token stays; resumed, it fires again', async () => {
    const { dir, file, net } = makeNet(`
places: { in: {}, out: {} }
transitions:
  stuck: { in: in, run: 'if [ ! -e once ]; then touch once; sleep 60; fi; cat', out: out }
`);
    await net.put('in', Buffer.from('x\n'), { key: 'k' });
    const controller = new AbortController();
    const events: string[] = [];
    const running = net.run({ signal: controller.signal, onEvent: (e: NetEvent) => events.push(e.type) });
    await until(() => fs.existsSync(path.join(dir, 'once')), 'the firing started');
    const p = await runFspl(['net', 'pause', file, 'stuck', '--kill']);
    expect(p.status, p.stderr).toBe(0);
    await until(
      async () =>
        (await net.status()).transitions[0]!.running === 0 && events.filter((e) => e === 'start').length === 1,
      'the firing abandoned',
    );
    expect(await tokensIn(path.join(dir, 'places/out'))).toEqual([]);
    expect((await tokensIn(path.join(dir, 'places/in'))).map((t) => t.key)).toEqual(['k']);
    net.resume('stuck');
    await until(async () => (await tokensIn(path.join(dir, 'places/out'))).length === 1, 'fired again');
    controller.abort();
    await running;
    expect(events.filter((e) => e === 'start')).toHaveLength(2);
  }, 60_000);

  test(
    'a transition of another host: say which host runs ' + 'it (exit 2); the other commands name the host too',
    async () => {
      const dir = netDir();
      const file = path.join(dir, 'net.yaml');
      fs.writeFileSync(
        file,
        `
hosts: { a: { ssh: a.example }, b: { ssh: b.example } }
places: { in: { host: a }, out: { host: b } }
transitions:
  t: { in: in, out: out, host: a }
`,
      );
      const r = await runFspl(['net', 'pause', file, 't', '--host', 'b']);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^Error: Transition t runs on host a, not b: pause it there/);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      // Without --host, the host the net file gives the transition (issue 40: don't ask what the file says).
      const none = await runFspl(['net', 'pause', file, 't']);
      expect([none.status, none.stderr]).toEqual([0, '']);
      const ok = await runFspl(['net', 'pause', file, 't', '--host', 'a']);
      expect(ok.status, ok.stderr).toBe(0);
      // The other operator commands act on one host's part of the net, named with --host.
      expect((await runFspl(['net', 'init', file, '--host', 'a'])).status).toBe(0);
      const ls = await runFspl(['net', 'ls', file, 'in', '--host', 'a']);
      expect([ls.status, ls.stdout]).toEqual([0, 'SEQ\tKEY\tAGE\tSIZE\tPARAMS\tRETRIED\tERROR\n']);
      // Where the net file says which host a place (or a transition) is on, --host is not needed.
      const bare = await runFspl(['net', 'ls', file, 'in']);
      expect([bare.status, bare.stdout, bare.stderr]).toEqual([0, 'SEQ\tKEY\tAGE\tSIZE\tPARAMS\tRETRIED\tERROR\n', '']);
      const which = await runFspl(['net', 'retry', file, '--all']);
      expect([which.status, which.stderr]).toEqual([
        2,
        'Error: The net runs on several hosts (a, b): say which one this is with --host NAME\n',
      ]);
    },
  );
});
