/** `net ls` and `net show`: the tokens of a place in order, one token's details and payload. */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { listTokens } from '../../../src/net/operate/tokens.js';
import { makeNet, runFspl } from '../helpers.js';

const NET = `
places: { in: {}, out: {}, failed: {} }
transitions:
  work: { in: in, run: 'false', out: out, error: failed }
`;

describe('net ls and net show', () => {
  test('ls lists in number order, in passes, with error details; show finds by key or number', async () => {
    const { dir, file, net } = makeNet(NET);
    for (let i = 0; i < 7; i++)
      await net.put('out', Buffer.from(`payload ${i}\n`), { key: `k${i}`, params: ['a', `p${i}`] });
    const seqs: bigint[] = [];
    for await (const t of listTokens(net.model, 'out', { pass: 3 })) seqs.push(t.seq);
    expect(seqs).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n]);

    const ls = await runFspl(['net', 'ls', file, 'out']);
    expect(ls.status, ls.stderr).toBe(0);
    const lines = ls.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('SEQ\tKEY\tAGE\tSIZE\tPARAMS\tRETRIED\tERROR');
    expect(lines.slice(1).map((l) => l.split('\t').slice(0, 2))).toEqual(
      Array.from({ length: 7 }, (_, i) => [String(i + 1), `k${i}`]),
    );
    expect(lines[1]!.split('\t')[4]).toBe('a p0');

    await net.put('in', Buffer.from('bad\n'), { key: 'bad' });
    await net.run({ drain: true });
    const json = await runFspl(['net', 'ls', file, 'failed', '--json']);
    const rows = json.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ seq: '1', key: 'bad', retried: 0, error: { transition: 'work', place: 'in' } });
    expect(rows[0].error.reason).toMatch(/exit/);

    const byKey = await runFspl(['net', 'show', file, 'failed', '--key', 'bad']);
    expect(byKey.status, byKey.stderr).toBe(0);
    expect(byKey.stdout).toMatch(/^place failed, number 1, key bad\n/);
    expect(byKey.stdout).toMatch(/failed in work, taken from in: .*\nlog .*logs\/work\/.*\.stderr\n/);
    expect(byKey.stdout).toMatch(/ {2}ERROR_TRANSITION="work"/);
    const payload = await runFspl(['net', 'show', file, 'out', '--seq', '3', '--payload']);
    expect([payload.status, payload.stdout]).toEqual([0, 'payload 2\n']);
    const t = await net.token('out', { key: 'k4' });
    expect([t.seq, t.params]).toEqual([5n, ['a', 'p4']]);
    expect(path.dirname(t.path)).toBe(path.join(dir, 'places/out/jobs'));

    for (const [args, message] of [
      [['ls', file, 'nowhere'], /No place named "nowhere"/],
      [['show', file, 'out', '--key', 'zz'], /No token with key "zz" in place out/],
      [['show', file, 'out', '--seq', '99'], /No token with number 99 in place out/],
      [['show', file, 'out'], /Say which token: --key K or --seq N/],
      [['show', file, 'out', '--seq', 'x'], /invalid --seq 'x'/],
    ] as Array<[string[], RegExp]>) {
      const r = await runFspl(['net', ...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });
});
