/**
 * The environment of a firing's command (fire-transition.ts): the job variables of its input tokens and
 * the firing's own, over its transition's `env`, over the runner's environment.
 */
import path from 'node:path';
import { ChildEnv, type EnvVariable, jobVariableStrings } from '../../queue/jobenv.js';
import type { TransitionSpec } from '../model/model.js';
import type { Token } from '../place/token.js';

/** A firing command's environment: its inputs' job variables, FSPL_NET_FIRING and _KEY, over its transition's. */
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
  // The transition's variables first: a later variable of the same name wins (jobenv.ts).
  return new ChildEnv([...transitionVars(t), ...vars], inheritedEnv());
}

/**
 * The runner's environment, copied at the first firing of the process and shared by every
 * transition: copying process.env is a call into C++ for each variable, and jobenv.ts packs a
 * frozen object once. Made per transition, a net of many transitions copied and packed it for each.
 */
let inherited: Readonly<Record<string, string | undefined>> | undefined;
function inheritedEnv(): Readonly<Record<string, string | undefined>> {
  return (inherited ??= Object.freeze({ ...process.env }));
}

/** What every firing of a transition adds to what it inherits: the transition's `env`, FSPL_NET_TRANSITION. */
const ownVars = new WeakMap<TransitionSpec, readonly EnvVariable[]>();
function transitionVars(t: TransitionSpec): readonly EnvVariable[] {
  let vars = ownVars.get(t);
  if (!vars) ownVars.set(t, (vars = [...Object.entries(t.env), ['FSPL_NET_TRANSITION', t.name]]));
  return vars;
}
