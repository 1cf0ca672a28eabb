/**
 * The environment of a firing's command (fire-transition.ts): the job variables of its input tokens, the
 * firing's own, over what every firing of its transition inherits.
 */
import path from 'node:path';
import { ChildEnv, type EnvVariable, jobVariableStrings } from '../../queue/jobenv.js';
import type { TransitionSpec } from '../model/model.js';
import type { Token } from '../place/token.js';

/** A firing command's environment: its inputs' job variables, FSPL_NET_FIRING and _KEY, over its transition's base. */
export function firingEnv(
  tokens: Token[],
  t: TransitionSpec,
  firing: string,
  key: string,
  extra: readonly EnvVariable[],
): ChildEnv {
  const first = tokens[0]!;
  const vars = jobVariableStrings(first.header, {
    queuedir: path.dirname(path.dirname(first.path)),
    filename: first.filename,
  });
  // Variables of the other inputs of a merge, where the first has none of that name.
  if (tokens.length > 1) {
    const names = new Set(vars.map(([k]) => k));
    for (let i = 1; i < tokens.length; i++) {
      for (const [k, v] of jobVariableStrings(tokens[i]!.header))
        if (k.startsWith('FSPL_SET_') && !names.has(k)) vars.push([k, v]);
    }
  }
  vars.push(['FSPL_NET_FIRING', firing], ['FSPL_NET_KEY', key], ...extra);
  return new ChildEnv(vars, baseEnv(t));
}

/**
 * What every firing of a transition inherits: the runner's environment, the transition's `env`,
 * FSPL_NET_TRANSITION. Made once per transition, not per firing: copying process.env (each of
 * its variables a call into C++) and sorting it cost several times the merge into a kept base,
 * which childEnvironment sorts once.
 */
const baseEnvs = new WeakMap<TransitionSpec, Readonly<Record<string, string | undefined>>>();
function baseEnv(t: TransitionSpec): Readonly<Record<string, string | undefined>> {
  let base = baseEnvs.get(t);
  // Frozen: jobenv.ts trusts what it worked out of a frozen object, with no check per firing.
  if (!base) baseEnvs.set(t, (base = Object.freeze({ ...process.env, ...t.env, FSPL_NET_TRANSITION: t.name })));
  return base;
}
