import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Tests of the public API import the package by its name, as users do. Node resolves that
    // through package.json "exports"; Vite's resolver mishandles a package importing itself.
    alias: [
      { find: /^filespooler$/, replacement: fileURLToPath(new URL('./dist/index.js', import.meta.url)) },
      { find: /^filespooler\/lowlevel$/, replacement: fileURLToPath(new URL('./dist/lowlevel.js', import.meta.url)) },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Tests spawn many short-lived processes; two workers match the two cores here.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
