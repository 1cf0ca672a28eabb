/**
 * A net's definition to its model, with every check: the structure (define.ts), then the checks
 * of the layers above it that need the whole model (hosts.ts). netfile.ts and `defineNet` both
 * go through here, so a net defined in JavaScript is held to the same rules as a net file.
 */
import { NetError } from '../../errors.js';
import { hostProblems } from '../hosts/hosts.js';
import { buildModel } from './define.js';
import type { ModelProblem, NetDefinition, NetModel } from './model.js';

export function buildNet(def: NetDefinition, file?: string): { model?: NetModel; problems: ModelProblem[] } {
  const built = buildModel(def, file);
  if (!built.model) return built;
  const problems = hostProblems(built.model);
  return problems.length > 0 ? { problems } : built;
}

/** Build a model from JavaScript, throwing NetError listing every problem. */
export function defineNet(def: NetDefinition): NetModel {
  const { model, problems } = buildNet(def);
  if (!model) throw new NetError(problems.map((p) => `${p.path.join('.')}: ${p.message}`).join('; '));
  return model;
}
