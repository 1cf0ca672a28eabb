/** The test tiers (test/tiers.ts): every test file in exactly one, and the scripts that run them. */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from '../helpers.js';
import { FAST, TIERS, type Tier, tiersOf } from '../tiers.js';

const files = (fs.readdirSync(path.join(ROOT, 'test'), { recursive: true }) as string[])
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => `test/${f.split(path.sep).join('/')}`);

test('every test file is in exactly one tier, so a new file cannot fall through', () => {
  const wrong = files.map((f) => [f, tiersOf(f).join(',')]).filter(([, t]) => t.split(',').length !== 1 || t === '');
  expect(wrong).toEqual([]);
});

test('every file or folder a tier names exists (a moved file is not silently dropped)', () => {
  const gone = Object.values(TIERS)
    .flat()
    .filter((p) => !fs.existsSync(path.join(ROOT, p)));
  expect(gone).toEqual([]);
});

test('npm test runs the fast tiers; test:all runs them all; test:soak the others', () => {
  const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts;
  const projects = (cmd: string) => [...cmd.matchAll(/--project (\S+)/g)].map((m) => m[1]);
  expect(projects(scripts.test)).toEqual(FAST);
  expect(scripts['test:all']).toBe('npm run build:quick && vitest run');
  const rest = (Object.keys(TIERS) as Tier[]).filter((t) => !FAST.includes(t));
  expect(projects(scripts['test:soak'])).toEqual(rest);
  const ci = fs.readFileSync(path.join(ROOT, '.ci/run'), 'utf8');
  expect(ci).toMatch(/^npm test /m);
  expect(ci).toMatch(/npm run test:soak /);
});
