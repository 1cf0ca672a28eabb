/** The published types, as a TypeScript user compiles against them. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, typecheck } from '../helpers.js';

describe('published types', () => {
  it(
    'a TypeScript consumer of the package compiles with tsc --noEmit, ' +
      'and the contracts it must not break do not (contracts.ts)',
    () => {
      expect(typecheck(path.join(ROOT, 'test', 'api', 'tsconfig.json'))).toBe('');
    },
  );
});
