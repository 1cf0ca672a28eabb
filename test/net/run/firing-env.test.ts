import { describe, expect, it } from 'vitest';
import type { TransitionSpec } from '../../../src/net/model/model.js';
import { IndexedToken, type Token } from '../../../src/net/place/token.js';
import { firingEnv } from '../../../src/net/run/firing-env.js';
import type { PacketHeader } from '../../../src/packet/types.js';

function token(seq: bigint, set: Array<[string, string]>): Token {
  const header: PacketHeader = {
    seq,
    ctime: { secs: 1_700_000_000n, nanos: 0 },
    cmd: { kind: 'Command', params: [], env: set.map(([k, v]) => [Buffer.from(k), Buffer.from(v)]) },
  };
  return new IndexedToken('in', '/q/in/jobs', `fspl-${seq}.fspl`, header, 0);
}

const transition = (name: string, env: Record<string, string>) => ({ name, env }) as unknown as TransitionSpec;

describe('firingEnv', () => {
  it("puts the job's variables over the transition's env, over the runner's environment", () => {
    process.env.FSPL_TEST_INHERITED = 'runner';
    const t = transition('work', { COLOUR: 'blue', HOME: '/t/home', FSPL_SET_A: 'from the transition' });
    const env = firingEnv([token(7n, [['A', 'from the job']])], t, 'f1', 'k1', [['FSPL_OUT_X', '/o']]).record();
    expect(env.FSPL_TEST_INHERITED).toBe('runner');
    expect(env.COLOUR).toBe('blue');
    expect(env.HOME).toBe('/t/home');
    expect(env.FSPL_SET_A).toBe('from the job');
    expect(env.FSPL_NET_TRANSITION).toBe('work');
    expect(env.FSPL_NET_FIRING).toBe('f1');
    expect(env.FSPL_NET_KEY).toBe('k1');
    expect(env.FSPL_OUT_X).toBe('/o');
    expect(env.FSPL_SEQ).toBe('7');
  });

  it("keeps each transition's own variables apart, over one inherited environment", () => {
    const a = firingEnv([token(1n, [])], transition('a', { ONLY_A: '1' }), 'f', 'k', []).record();
    const b = firingEnv([token(2n, [])], transition('b', {}), 'f', 'k', []).record();
    expect(a.ONLY_A).toBe('1');
    expect(b.ONLY_A).toBeUndefined();
    expect([a.FSPL_NET_TRANSITION, b.FSPL_NET_TRANSITION]).toEqual(['a', 'b']);
    expect(Object.keys(b)).toEqual(Object.keys(b).sort());
  });

  it('packs the same environment as it makes as an object, in name order', () => {
    const env = firingEnv([token(3n, [['Z', 'z']])], transition('p', { B: 'b' }), 'f', 'k', []);
    const packed = env.packed()!.split('\0').filter(Boolean);
    expect(packed).toEqual(Object.entries(env.record()).map(([k, v]) => `${k}=${v}`));
  });
});
