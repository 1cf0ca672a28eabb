/**
 * A net's definition to its model, with every check: the structure (define.ts), then the checks
 * of the layers above it that need the whole model (hosts.ts). netfile.ts and `defineNet` both
 * go through here, so a net defined in JavaScript is held to the same rules as a net file.
 */
import { NetError } from '../../base/errors.js';
import { buildModel } from './define.js';
import { hostProblems } from './host-problems.js';
import type { ModelProblem, NetDefinition, NetModel } from './model.js';

/** The model, or (with no model) every problem: the structure's and the hosts' together. */
export function buildNet(def: NetDefinition, file?: string): { model?: NetModel; problems: ModelProblem[] } {
  const { model, problems } = buildModel(def, file);
  problems.push(...hostProblems(model));
  return problems.length > 0 ? { problems } : { model, problems };
}

/** Build a model from JavaScript, throwing NetError listing every problem. */
export function defineNet(def: NetDefinition): NetModel {
  const { model, problems } = buildNet(def);
  if (!model) throw new NetError(problems.map((p) => `${p.path.join('.')}: ${p.message}`).join('; '));
  return model;
}
