/**
 * `net run` as a service: on SIGTERM it lets running firings finish within --stop-timeout, or
 * abandons them (their tokens stay, nothing is lost), and exits 0.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { makeNet, sleep, spawnFspl, tokensIn } from '../helpers.js';

async function runThenTerm(cmd: string, stopTimeout: string): Promise<{ code: number | null; dir: string }> {
  const { dir, file, net } = makeNet(`
places: { in: {}, out: {} }
transitions:
  work: { in: in, run: 'touch started; ${cmd}', out: out }
`);
  await net.put('in', Buffer.from('x\n'), { key: 'k' });
  const child = spawnFspl(['net', 'run', file, '--stop-timeout', stopTimeout, '-l', 'error']);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 400 && !fs.existsSync(path.join(dir, 'started')); i++) await sleep(25);
  expect(fs.existsSync(path.join(dir, 'started'))).toBe(true);
  child.kill('SIGTERM');
  return { code: await exited, dir };
}

test('SIGTERM: a firing that finishes within --stop-timeout commits; exit 0', async () => {
  const { code, dir } = await runThenTerm('sleep 0.5; cat', '20');
  expect(code).toBe(0);
  expect((await tokensIn(path.join(dir, 'places/out'))).map((t) => t.payload)).toEqual(['x\n']);
  expect(await tokensIn(path.join(dir, 'places/in'))).toEqual([]);
});

test('SIGTERM: a firing still running at --stop-timeout is abandoned, its token stays; exit 0', async () => {
  const { code, dir } = await runThenTerm('sleep 30; cat', '0.2');
  expect(code).toBe(0);
  expect(await tokensIn(path.join(dir, 'places/out'))).toEqual([]);
  expect((await tokensIn(path.join(dir, 'places/in'))).map((t) => t.key)).toEqual(['k']);
});
