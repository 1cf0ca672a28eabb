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

/**
 * The lines a terminal shows after these bytes, as far as fspl's lines need: `\r` goes back to
 * the start of the line, `\n` to the next line, ESC [ K erases to the end of the line, other
 * escape sequences are left out, and any other character is written over what is there.
 */
export function screenLines(raw: string): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '\r') col = 0;
    else if (c === '\n') {
      row++;
      col = 0;
      lines[row] ??= [];
    } else if (c === '\x1b') {
      const seq = /^\x1b\[[0-9;?]*[A-Za-z]/.exec(raw.slice(i))?.[0] ?? '\x1b';
      if (seq.endsWith('K')) lines[row]!.length = col;
      i += seq.length - 1;
    } else {
      const line = lines[row]!;
      while (line.length < col) line.push(' ');
      line[col++] = c;
    }
  }
  return lines.map((l) => l.join(''));
}
