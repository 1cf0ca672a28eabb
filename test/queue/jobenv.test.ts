import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makeHeader } from '../../src/packet/prepare.js';
import {
  ChildEnv,
  childEnvironment,
  type JobVariable,
  jobEnvironment,
  jobVariableStrings,
  jobVariables,
} from '../../src/queue/jobenv.js';

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
    expect(entries(jobEnvironment([v('C', 'c')], base))).toEqual([
      ['A', 'a'],
      ['B', 'b'],
      ['C', 'c'],
    ]);
    base.AA = 'aa';
    base.B = 'changed';
    expect(entries(jobEnvironment([v('C', 'c')], base))).toEqual([
      ['A', 'a'],
      ['AA', 'aa'],
      ['B', 'changed'],
      ['C', 'c'],
    ]);
    delete base.A;
    base.D = undefined;
    expect(entries(jobEnvironment([], base))).toEqual([
      ['AA', 'aa'],
      ['B', 'changed'],
    ]);
  });

  it('gives what the definition gives, in the same order', () => {
    const name = fc.string({
      unit: fc.constantFrom('A', 'B', 'a', '_', '1', 'é', 'FSPL_', '\u{1F600}'),
      minLength: 1,
      maxLength: 6,
    });
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

describe('jobVariableStrings', () => {
  it(
    'gives what jobVariables gives, decoded as jobEnvironment ' +
      'decodes it (bytes that are not UTF-8 too), whatever TZ says',
    () => {
      const bad = Uint8Array.from([0x66, 0xff, 0xfe, 0x6f]); // not UTF-8
      const header = makeHeader({
        seq: 12345678901234567890n,
        ctime: { secs: 1_700_000_000n, nanos: 42 },
        cmd: {
          kind: 'Command',
          params: [Buffer.from('one'), bad],
          env: [
            [Buffer.from('KEY'), Buffer.from('k1')],
            [bad, bad],
          ],
        },
      });
      const where = { queuedir: '/q/dir', filename: 'fspl-1.fspl' };
      const saved = process.env.TZ;
      try {
        for (const tz of [undefined, 'UTC', 'America/New_York', 'EST5EDT', 'Asia/Kolkata']) {
          if (tz === undefined) delete process.env.TZ;
          else process.env.TZ = tz;
          for (const at of [where, undefined]) {
            const decoded = jobVariables(header, at).map(([k, val]) => [k.toString('utf8'), val.toString('utf8')]);
            expect(jobVariableStrings(header, at)).toEqual(decoded);
          }
        }
      } finally {
        if (saved === undefined) delete process.env.TZ;
        else process.env.TZ = saved;
      }
      // One header for both sides: made twice, each would take its own ctime (now), a millisecond apart at times.
      const nop = makeHeader({ seq: 1n, cmd: { kind: 'NOP' } });
      expect(jobVariableStrings(nop)).toEqual(jobVariables(nop).map(([k, val]) => [k.toString(), val.toString()]));
    },
  );
});

describe('ChildEnv', () => {
  /** The definition, packed: NAME=value\0 for each variable, sorted by name; undefined with a NUL. */
  function packedReference(own: Array<[string, string]>, base: Record<string, string | undefined>): string | undefined {
    const merged = new Map<string, string>();
    for (const [k, val] of Object.entries(base)) if (val !== undefined) merged.set(k, val);
    for (const [k, val] of own) merged.set(k, val);
    const keys = [...merged.keys()].sort();
    if (keys.some((k) => k.includes('\0') || merged.get(k)!.includes('\0'))) return undefined;
    return keys.map((k) => `${k}=${merged.get(k)}\0`).join('');
  }

  it('packs what childEnvironment makes, sorted, and follows changes to the inherited object', () => {
    const name = fc.string({
      unit: fc.constantFrom('A', 'B', 'a', '_', '1', 'é', 'FSPL_', '\u{1F600}', '\0'),
      minLength: 1,
      maxLength: 6,
    });
    fc.assert(
      fc.property(
        fc.dictionary(name, fc.option(fc.string({ maxLength: 5 }), { nil: undefined })),
        fc.array(fc.tuple(name, fc.string({ maxLength: 5 }))),
        (base, own) => {
          const env = new ChildEnv(own, base);
          expect(env.packed()).toEqual(packedReference(own, base));
          expect(env.record()).toEqual(childEnvironment(own, base));
          // Again, from the cache; then after the inherited object changed.
          expect(new ChildEnv(own, base).packed()).toEqual(packedReference(own, base));
          base.ZZ_ADDED = 'z';
          const first = Object.keys(base)[0]!;
          base[first] = 'changed';
          expect(new ChildEnv(own, base).packed()).toEqual(packedReference(own, base));
        },
      ),
      { numRuns: 300 },
    );
  });

  it(
    'a NUL in a variable the child would get: not packed ' +
      '(child_process then refuses it); one replaced by the job: packed',
    () => {
      expect(new ChildEnv([['A', 'x\0y']], { B: 'b' }).packed()).toBeUndefined();
      expect(new ChildEnv([['A', 'a']], { A: 'bad\0', B: 'b' }).packed()).toBe('A=a\0B=b\0');
    },
  );

  it('packs jobs of one frozen inherited object, each with its own names, as the definition does', () => {
    const base = Object.freeze({ A: 'a', FSPL_X: 'x', FSPL_Z: 'z', HOME: '/h', PATH: '/p', Z: 'bad\0' });
    const jobs: Array<Array<[string, string]>> = [
      [
        ['FSPL_SEQ', '1'],
        ['FSPL_Y', 'y'],
      ],
      [
        ['FSPL_SEQ', '2'],
        ['FSPL_X', 'replaced'],
      ],
      [
        ['B', 'b'],
        ['Q', 'q'],
      ],
      [['Z', 'fine']],
      [],
      [
        ['FSPL_SEQ', '3'],
        ['FSPL_Y', 'y'],
      ],
    ];
    for (const own of jobs)
      expect(new ChildEnv(own, base).packed(), JSON.stringify(own)).toEqual(packedReference(own, base));
    expect(new ChildEnv(jobs[3]!, base).packed()).toBe('A=a\0FSPL_X=x\0FSPL_Z=z\0HOME=/h\0PATH=/p\0Z=fine\0');
  });
});
