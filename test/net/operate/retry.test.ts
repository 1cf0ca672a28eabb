/**
 * `net retry`: error tokens go back where they came from, exactly once, with RETRIED counted;
 * while `net run` runs and while it does not; an and-merge's pair together.
 */
import fs from 'node:fs';
import path from 'node:path';
import { NetRequestError } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { makeNet, runFspl, sleep, spawnFspl, tokensIn } from '../helpers.js';

const FLAKY =
  `
places: { in: {}, out: {}, failed: {} }
transitions:
  work:
    in: in
    run: 'if [ ! -e fixed ] && case "$FSPL_SET_KEY" in *3|*7) true;; ` +
  `*) false;; esac; then echo broken >&2; exit 1; fi; sed s/^/w:/'
    out: out
    error: failed
`;

async function keysIn(dir: string, place: string): Promise<string[]> {
  return (await tokensIn(path.join(dir, 'places', place))).filter((t) => t.kind === 'Command').map((t) => t.key);
}

describe('net retry', () => {
  test('after a fix, every key reaches the sink once: retried while net run runs', async () => {
    const { dir, file, net } = makeNet(FLAKY);
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    for (const k of keys) await net.put('in', Buffer.from(`${k}\n`), { key: k, env: { COLOUR: 'blue' } });
    await net.run({ drain: true, workers: 2 });
    const failed = await tokensIn(path.join(dir, 'places/failed'));
    expect(failed.map((t) => t.key).sort()).toEqual(['k13', 'k17', 'k3', 'k7']);
    for (const t of failed)
      expect([t.env.ERROR_TRANSITION, t.env.ERROR_PLACE, t.env.COLOUR]).toEqual(['work', 'in', 'blue']);

    fs.writeFileSync(path.join(dir, 'fixed'), ''); // the fix
    const runner = spawnFspl(['net', 'run', '--workers', '2', '-l', 'error', file]);
    const dry = await runFspl(['net', 'retry', file, '--all', '--dry-run']);
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout.split('\n').filter(Boolean)).toHaveLength(4);
    expect(dry.stdout).toMatch(/would move k3: failed #\d+ -> in \(work, RETRIED=1\)/);
    const r = await runFspl(['net', 'retry', file, '--all']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toHaveLength(4);
    for (let i = 0; i < 200 && (await keysIn(dir, 'out')).length < 20; i++) await sleep(50);
    runner.kill('SIGTERM');
    await new Promise((resolve) => runner.on('exit', resolve));
    const out = await tokensIn(path.join(dir, 'places/out'));
    expect(out.map((t) => t.key).sort()).toEqual([...keys].sort());
    for (const t of out) {
      expect(t.payload).toBe(`w:${t.key}\n`);
      expect(t.env.COLOUR).toBe('blue');
      expect(t.env.RETRIED).toBe(['k3', 'k7', 'k13', 'k17'].includes(t.key) ? '1' : undefined);
      expect(Object.keys(t.env).filter((k) => k.startsWith('ERROR_'))).toEqual([]);
    }
    expect(await keysIn(dir, 'failed')).toEqual([]);
  });

  test('a token that fails again comes back with RETRIED; --key and --transition choose', async () => {
    const { dir, net } = makeNet(FLAKY);
    for (const k of ['a3', 'b7', 'c1']) await net.put('in', Buffer.from(k), { key: k });
    await net.run({ drain: true });
    const first = await net.retry({ keys: ['a3'] });
    expect(first.moves.map((m) => [m.key, m.from.place, m.to.place, m.retried])).toEqual([['a3', 'failed', 'in', 1]]);
    expect(first.moves[0]!.to.seq).toBe(4n); // a new number in the place's own numbering (1-3 were put)
    await net.run({ drain: true }); // still broken: back in failed, RETRIED=1
    const again = (await tokensIn(path.join(dir, 'places/failed'))).find((t) => t.key === 'a3')!;
    expect(again.env.RETRIED).toBe('1');
    const second = await net.retry({ transition: 'work' });
    expect(second.moves.map((m) => [m.key, m.retried]).sort()).toEqual([
      ['a3', 2],
      ['b7', 1],
    ]);
    expect(await keysIn(dir, 'failed')).toEqual([]);
    expect((await keysIn(dir, 'in')).sort()).toEqual(['a3', 'b7']);
  });

  test('an and-merge: the pair goes back together and pairs again', async () => {
    const { dir, file, net } = makeNet(`
places: { a: {}, b: {}, out: {}, failed: {} }
transitions:
  join: { in: [a, b], run: '[ -e fixed ] && cat "$FSPL_IN_a" "$FSPL_IN_b"', out: out, error: failed }
`);
    for (const k of ['p', 'q']) {
      await net.put('a', Buffer.from(`${k}a\n`), { key: k });
      await net.put('b', Buffer.from(`${k}b\n`), { key: k });
    }
    await net.run({ drain: true });
    const failed = await tokensIn(path.join(dir, 'places/failed'));
    expect(failed.map((t) => [t.key, t.env.ERROR_PLACE]).sort()).toEqual([
      ['p', 'a'],
      ['p', 'b'],
      ['q', 'a'],
      ['q', 'b'],
    ]);
    fs.writeFileSync(path.join(dir, 'fixed'), '');
    const r = await runFspl(['net', 'retry', file, 'failed', '--key', 'p']);
    expect(r.status, r.stderr).toBe(0);
    expect((await tokensIn(path.join(dir, 'places/a'))).map((t) => [t.key, t.payload])).toEqual([['p', 'pa\n']]);
    expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => [t.key, t.payload])).toEqual([['p', 'pb\n']]);
    const summary = await net.run({ drain: true });
    expect(summary.leftovers).toEqual([]);
    expect((await tokensIn(path.join(dir, 'places/out'))).map((t) => [t.key, t.payload])).toEqual([['p', 'pa\npb\n']]);
    expect((await keysIn(dir, 'failed')).sort()).toEqual(['q', 'q']);
  });

  test(
    'an old error token without ERROR_PLACE goes to its ' + 'transition’s one input; a gone transition needs --to',
    async () => {
      const { dir, file, net } = makeNet(FLAKY);
      await net.put('failed', Buffer.from('x'), {
        key: 'old',
        env: { ERROR_TRANSITION: 'work', ERROR_REASON: 'exit 1' },
      });
      await net.put('failed', Buffer.from('y'), { key: 'gone', env: { ERROR_TRANSITION: 'vanished' } });
      const r = await runFspl(['net', 'retry', file, '--key', 'gone']);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^Error: .*vanished.*--to PLACE\n$/);
      await expect(net.retry({ keys: ['old'] })).resolves.toMatchObject({
        moves: [{ key: 'old', to: { place: 'in' } }],
      });
      await expect(net.retry({ keys: ['gone'], to: 'in' })).resolves.toMatchObject({
        moves: [{ key: 'gone', to: { place: 'in' } }],
      });
      expect((await keysIn(dir, 'in')).sort()).toEqual(['gone', 'old']);
      await expect(net.retry({ keys: ['nope'] })).rejects.toThrow(NetRequestError);
    },
  );

  test('each bad request: one line on stderr, exit 2, nothing moved', async () => {
    const { dir, file, net } = makeNet(FLAKY);
    await net.put('failed', Buffer.from('x'), { key: 'k', env: { ERROR_TRANSITION: 'work', ERROR_PLACE: 'in' } });
    const cases: Array<[string[], RegExp]> = [
      [['retry', file, '--all', 'nowhere'], /No place named "nowhere"/],
      [['retry', file, 'in', '--all'], /Place in is read by work/],
      [['retry', file, '--key', 'zz'], /No error token with key "zz"/],
      [['retry', file, '--transition', 'zz'], /No transition named "zz"/],
      [['retry', file], /Say which error tokens to retry/],
      [['retry', file, '--all', '--to', 'zz'], /No place named "zz"/],
      [['pause', file, 'zz'], /No transition named "zz"/],
      [['resume', file, 'zz'], /No transition named "zz"/],
    ];
    for (const [args, message] of cases) {
      const r = await runFspl(['net', ...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
    }
    expect(await keysIn(dir, 'failed')).toEqual(['k']);
  });
});
