import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import { defineConfig } from 'vitest/config';
import { TIERS, type Tier, tiersOf } from './test/tiers.js';

// Each tier is a vitest project listing its files (test/tiers.ts says which, and why).
const files = (fs.readdirSync('test', { recursive: true }) as string[])
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => `test/${f.split('\\').join('/')}`);
const projects = (Object.keys(TIERS) as Tier[]).map((name) => ({
  extends: true as const,
  test: { name, include: files.filter((f) => tiersOf(f).includes(name)) },
}));

export default defineConfig({
  resolve: {
    // Tests of the public API import the package by its name, as users do; Vite's resolver
    // mishandles a package importing itself, so the name is mapped here. To src/, not dist/: the
    // tests then test the current source even before a build, and a test that imports src/ as
    // well gets the same classes, not a second copy. The build as published is tested where
    // Node itself resolves the package (test/api/pack.test.ts, test/api/docs.test.ts) and by
    // every test that runs bin/fspl; every test script builds first, when dist/ is stale
    // (package.json build:quick).
    alias: [
      { find: /^filespooler$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
      { find: /^filespooler\/lowlevel$/, replacement: fileURLToPath(new URL('./src/lowlevel.ts', import.meta.url)) },
      { find: /^filespooler\/net$/, replacement: fileURLToPath(new URL('./src/net-tools.ts', import.meta.url)) },
    ],
  },
  test: {
    projects,
    // Tests spawn many short-lived processes; two workers match the two cores here.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
