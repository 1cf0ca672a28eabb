/**
 * `net set-aside`: a poison token leaves its place for STATE/set-aside with its reason, a NOP
 * takes its number so the sequence goes on, and `net retry --set-aside` brings it back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { makeHeader } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { NOP_PART_PREFIX } from '../../../src/net/operate/aside-queue.js';
import { recoverOperations } from '../../../src/net/operate/operator.js';
import { writePacketSync } from '../../../src/packet/prepare.js';
import { makeNet, runFspl, sleep, spawnFspl, tokensIn } from '../helpers.js';

const NET = `
places: { in: {}, out: {} }
transitions:
  work: { in: in, run: 'sed s/^/w:/', out: out }
`;

describe('net set-aside', () => {
  test('set aside, the place goes on past its number, brought back under a new number', async () => {
    const { dir, file, net } = makeNet(NET);
    for (let i = 0; i < 3; i++) await net.put('in', Buffer.from(`p${i}\n`), { key: `k${i}`, params: ['x'] });
    const r = await runFspl(['net', 'set-aside', file, 'in', '--key', 'k1', '--reason', 'crashes the parser']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('set aside k1: in #2 -> set-aside #1 (a NOP took number 2)\n');
    const inNow = await tokensIn(path.join(dir, 'places/in'));
    expect(inNow.map((t) => [t.seq, t.kind, t.key])).toEqual([
      [1n, 'Command', 'k0'],
      [2n, 'NOP', ''],
      [3n, 'Command', 'k2'],
    ]);
    const aside = await tokensIn(path.join(dir, 'net.state/set-aside'));
    expect(aside).toHaveLength(1);
    expect(aside[0]).toMatchObject({ key: 'k1', payload: 'p1\n' });
    expect(aside[0]!.env).toMatchObject({
      SET_ASIDE_PLACE: 'in',
      SET_ASIDE_SEQ: '2',
      SET_ASIDE_REASON: 'crashes the parser',
    });
    expect((await net.run({ drain: true })).leftovers).toEqual([]);
    expect((await tokensIn(path.join(dir, 'places/out'))).map((t) => t.key)).toEqual(['k0', 'k2']);

    const back = await runFspl(['net', 'retry', file, '--set-aside', '--seq', '2']);
    expect(back.status, back.stderr).toBe(0);
    expect(back.stdout).toBe('moved k1: (set-aside) #1 -> in #4\n');
    expect(await tokensIn(path.join(dir, 'net.state/set-aside'))).toEqual([]);
    const restored = (await tokensIn(path.join(dir, 'places/in'))).filter((t) => t.kind === 'Command');
    expect(restored.map((t) => [t.key, t.payload, Object.keys(t.env).some((k) => k.startsWith('SET_ASIDE_'))])).toEqual(
      [['k1', 'p1\n', false]],
    );
    await net.run({ drain: true });
    expect((await tokensIn(path.join(dir, 'places/out'))).map((t) => [t.key, t.payload])).toEqual([
      ['k0', 'w:p0\n'],
      ['k2', 'w:p2\n'],
      ['k1', 'w:p1\n'],
    ]);
  });

  test('refused while a net run reads the place; bad requests exit 2', async () => {
    const { dir, file, net } = makeNet(NET.replace("run: 'sed s/^/w:/'", "run: 'sleep 30'"));
    await net.put('in', Buffer.from('x'), { key: 'a' });
    await net.put('in', Buffer.from('y'), { key: 'b' });
    const runner = spawnFspl(['net', 'run', file, '--workers', '1', '-l', 'error']);
    for (let i = 0; i < 100 && !fs.existsSync(path.join(dir, 'net.state/live.json')); i++) await sleep(50);
    const busy = await runFspl(['net', 'set-aside', file, 'in', '--key', 'b']);
    expect(busy.status).toBe(1);
    expect(busy.stderr).toMatch(/^Error: Place in is being read .*stop it, then set the token aside\n$/);
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.on('exit', resolve));
    for (const [args, message] of [
      [['set-aside', file, 'in', '--key', 'zz'], /No token with key "zz" in place in/],
      [['set-aside', file, 'nowhere', '--key', 'a'], /No place named "nowhere"/],
      [['retry', file, '--set-aside', '--key', 'zz'], /No token set aside with key "zz"/],
      [['retry', file, '--set-aside'], /Say which tokens set aside/],
    ] as Array<[string[], RegExp]>) {
      const r = await runFspl(['net', ...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
    }
    expect((await tokensIn(path.join(dir, 'places/in'))).map((t) => t.key)).toEqual(['a', 'b']);
  });
});

describe('net set-aside, killed half-way', () => {
  /** A NOP staged for number `seq`, as set-aside stages it before its move is recorded. */
  function stageNopPart(jobs: string, seq: bigint): string {
    const part = path.join(jobs, `${NOP_PART_PREFIX}${seq}.part`);
    const fd = fs.openSync(part, 'w');
    writePacketSync(fd, makeHeader({ seq, cmd: { kind: 'NOP' } }));
    fs.closeSync(fd);
    return part;
  }

  test(
    'recovery removes the staged NOP while the token is ' + 'still there, and publishes it once the token is gone',
    async () => {
      const { dir, net } = makeNet(NET);
      for (let i = 0; i < 3; i++) await net.put('in', Buffer.from(`p${i}\n`), { key: `k${i}` });
      await net.retry({ setAside: true, all: true }); // an operator command: the operate journal exists
      const jobs = path.join(dir, 'places/in/jobs');
      // Killed before its move was recorded: the token stays, the NOP goes.
      const part = stageNopPart(jobs, 2n);
      await recoverOperations(net.model);
      expect(fs.existsSync(part)).toBe(false);
      expect((await tokensIn(path.join(dir, 'places/in'))).map((t) => [t.seq, t.kind])).toEqual([
        [1n, 'Command'],
        [2n, 'Command'],
        [3n, 'Command'],
      ]);
      // Killed after the token was removed, before the NOP was published: the NOP takes the number.
      const token = (await tokensIn(path.join(dir, 'places/in')))[1]!;
      fs.unlinkSync(path.join(jobs, token.filename));
      stageNopPart(jobs, 2n);
      await recoverOperations(net.model);
      expect((await tokensIn(path.join(dir, 'places/in'))).map((t) => [t.seq, t.kind])).toEqual([
        [1n, 'Command'],
        [2n, 'NOP'],
        [3n, 'Command'],
      ]);
      expect(fs.readdirSync(jobs).filter((n) => n.endsWith('.part'))).toEqual([]);
    },
  );
});
