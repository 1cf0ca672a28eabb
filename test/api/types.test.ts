/** The published types, as a TypeScript user compiles against them. */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

describe('published types', () => {
  it('a TypeScript consumer of the package compiles with tsc --noEmit', () => {
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    let out = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', path.join(ROOT, 'test', 'api', 'tsconfig.json')], { encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      out = String((err as { stdout?: string }).stdout ?? err);
    }
    expect(out).toBe('');
  });
});
