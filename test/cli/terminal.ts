/** Running fspl under a pseudo-terminal (script(1)), so that its stderr is a TTY. */
import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import { FSPL_BIN } from '../helpers.js';

/** `fspl ARGS` under a pseudo-terminal; what the terminal showed. It must exit 0. */
export function onTerminal(args: string[]): string {
  const cmd = [process.execPath, FSPL_BIN, ...args].map((a) => `'${a}'`).join(' ');
  const r = spawnSync('script', ['-qfec', cmd, '/dev/null'], { encoding: 'utf8' });
  expect(r.status).toBe(0);
  return r.stdout;
}
