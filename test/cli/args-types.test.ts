/** The CLI's arguments typed from its grammar: test/cli/args-types.ts compiles, and each of its refusals is one. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, typecheck } from '../helpers.js';

describe('typed CLI arguments (src/cli/parse/grammar.ts ArgsOf)', () => {
  it('a handler reads only the names its command has, each of its kind (tsc --noEmit)', () => {
    expect(typecheck(path.join(ROOT, 'test', 'cli', 'tsconfig.types.json'))).toBe('');
  });
});
