/**
 * A net file's data (as YAML gives it) checked by the schema (schema.ts) and turned into the model
 * (build.ts), with the problems of both. Where they are in the file is netfile-located.ts's part.
 */
import path from 'node:path';
import { buildNet } from './build.js';
import type { ModelProblem, NetDefinition, NetModel } from './model.js';
import { checkShape } from './schema.js';

/** The model of a net file's data (`file` anchors relative paths), and every problem found: none, or no model. */
export function modelOfData(data: unknown, file: string): { model?: NetModel; problems: ModelProblem[] } {
  const shape = checkShape(data);
  const problems = [...shape.problems];
  if (shape.data === undefined) return { problems };
  const def = {
    ...(shape.data as Omit<NetDefinition, 'dir'>),
    dir: path.dirname(path.resolve(file)),
  } as NetDefinition;
  const built = buildNet(def, path.resolve(file));
  problems.push(...built.problems.filter((p) => !followsOn(p, shape.pruned)));
  return { model: built.model, problems };
}

/** A cross-check that finds missing a value the schema refused (and salvage took out) says nothing new. */
function followsOn(problem: ModelProblem, pruned: ReadonlyArray<ReadonlyArray<string | number>>): boolean {
  const absent = problem.absent;
  return absent !== undefined && pruned.some((p) => p.length <= absent.length && p.every((k, i) => k === absent[i]));
}
