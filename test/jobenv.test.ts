import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jobEnvironment, type JobVariable } from '../src/jobenv.js';

/** The definition: inherited variables, the job's added or replacing them, sorted by name. */
function reference(vars: JobVariable[], base: NodeJS.ProcessEnv): Record<string, string> {
  const merged = new Map<string, string>();
  for (const [k, v] of Object.entries(base)) if (v !== undefined) merged.set(k, v);
  for (const [k, v] of vars) merged.set(k.toString('utf8'), v.toString('utf8'));
  const env: Record<string, string> = {};
  for (const k of [...merged.keys()].sort()) env[k] = merged.get(k)!;
  return env;
}

const v = (k: string, val: string): JobVariable => [Buffer.from(k), Buffer.from(val)];
const entries = (o: object) => Object.entries(o);

describe('jobEnvironment', () => {
  it('adds and replaces variables, sorted by name', () => {
    const base = { PATH: '/bin', FSPL_SEQ: 'old', HOME: '/root', Z: 'z', UNDEF: undefined };
    const env = jobEnvironment([v('FSPL_SEQ', '7'), v('FSPL_SET_A', 'a'), v('A', '1'), v('FSPL_SET_A', 'again')], base);
    expect(entries(env)).toEqual([
      ['A', '1'],
      ['FSPL_SEQ', '7'],
      ['FSPL_SET_A', 'again'],
      ['HOME', '/root'],
      ['PATH', '/bin'],
      ['Z', 'z'],
    ]);
  });

  it('follows changes to the same inherited object between calls', () => {
    const base: NodeJS.ProcessEnv = { B: 'b', A: 'a' };
    expect(entries(jobEnvironment([v('C', 'c')], base))).toEqual([['A', 'a'], ['B', 'b'], ['C', 'c']]);
    base.AA = 'aa';
    base.B = 'changed';
    expect(entries(jobEnvironment([v('C', 'c')], base))).toEqual([['A', 'a'], ['AA', 'aa'], ['B', 'changed'], ['C', 'c']]);
    delete base.A;
    base.D = undefined;
    expect(entries(jobEnvironment([], base))).toEqual([['AA', 'aa'], ['B', 'changed']]);
  });

  it('gives what the definition gives, in the same order', () => {
    const name = fc.string({ unit: fc.constantFrom('A', 'B', 'a', '_', '1', 'é', 'FSPL_', '\u{1F600}'), minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(
        fc.dictionary(name, fc.option(fc.string({ maxLength: 5 }), { nil: undefined })),
        fc.array(fc.tuple(name, fc.string({ maxLength: 5 }))),
        fc.uint8Array({ maxLength: 4 }),
        (base, own, raw) => {
          const vars = own.map(([k, val]) => v(k, val));
          vars.push([Buffer.from(raw), Buffer.from(raw)]); // bytes that need not be UTF-8
          const got = jobEnvironment(vars, base);
          expect(entries(got)).toEqual(entries(reference(vars, base)));
          // Twice, for the per-object cache.
          expect(entries(jobEnvironment(vars, base))).toEqual(entries(got));
        },
      ),
      { numRuns: 300 },
    );
  });
});
