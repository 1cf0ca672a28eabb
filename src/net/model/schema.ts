/**
 * The shape of a net file (a zod schema), what its issues say (each unknown key on its own, with
 * the allowed key it is probably a typo of), and what of a file that fails it can still be
 * cross-checked: the file with its bad values pruned, so that `net check` reports an unknown key
 * and an unknown place in one run rather than one kind of error per run.
 */
import * as z from 'zod';
import { didYouMean } from '../../base/suggest.js';
import type { ModelProblem } from './model.js';

const name = z.string();
const positiveInt = z.number().int().min(1);
const seconds = z.number().positive();

const placeSchema = z
  .object({
    dir: z.string().min(1).optional(),
    order: z.enum(['sequence', 'arrival']).optional(),
    capacity: positiveInt.optional(),
    // No transition reads it, on purpose: the net's results (check.ts does not warn about it).
    sink: z.boolean().optional(),
    // Read by the distributed layer.
    host: name.optional(),
    sync: z.boolean().optional(),
    // Signed places (hosts.ts, place/signatures.ts): an allowed_signers file, and/or hosts whose key signs.
    signers: z.string().min(1).optional(),
    from: z.union([name, z.array(name).min(1)]).optional(),
  })
  .strict();

const arcSchema = z.union([
  name,
  z.object({ place: name, take: positiveInt.optional(), 'max-wait': seconds.optional() }).strict(),
]);

const transitionSchema = z
  .object({
    in: z.union([arcSchema, z.array(arcSchema).min(1)]),
    out: z
      .union([
        name,
        z.array(name).min(1),
        z.object({ 'one-of': z.array(name).min(2) }).strict(),
        z.object({ 'any-of': z.array(name).min(2) }).strict(),
      ])
      .optional(),
    run: z.union([z.string().min(1), z.array(z.string()).min(1), z.null()]).optional(),
    env: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).optional(),
    cwd: z.string().min(1).optional(),
    error: name.optional(),
    retries: z.number().int().min(0).optional(),
    timeout: seconds.optional(),
    workers: positiveInt.optional(),
    order: z.enum(['input', 'none']).optional(),
    inhibit: z.array(name).optional(),
    host: name.optional(),
    user: z.union([z.string().min(1), z.number().int().min(0)]).optional(),
    group: z.union([z.string().min(1), z.number().int().min(0)]).optional(),
  })
  .strict();

const netSchema = z
  .object({
    state: z.string().min(1).optional(),
    places: z.record(
      z.string(),
      placeSchema.nullable().transform((p) => p ?? {}),
    ),
    transitions: z.record(z.string(), transitionSchema).optional(),
    hosts: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

type Path = Array<string | number>;

/** What the schema makes of a net file's data: its problems, and the data left to cross-check. */
export interface ShapeCheck {
  problems: ModelProblem[];
  /**
   * The data as the schema gives it: the file's own when it has no problem; otherwise the file
   * with every value the schema refused taken out (a transition whose `in` is refused, whole),
   * or undefined when too little is left to cross-check (no usable `places`).
   */
  data?: unknown;
  /** The paths taken out: a cross-check that finds a value missing there says nothing new. */
  pruned: Path[];
}

export function checkShape(raw: unknown): ShapeCheck {
  const first = netSchema.safeParse(raw);
  if (first.success) return { problems: [], data: first.data, pruned: [] };
  const problems = first.error.issues.flatMap(problemsOf(raw));
  return { problems, ...salvage(raw, first.error.issues) };
}

/** A zod issue as problems: each unknown key on its own (at the key), a missing key, a bad value. */
function problemsOf(raw: unknown): (issue: z.core.$ZodIssue) => ModelProblem[] {
  return (issue) => {
    const path = issue.path as Path;
    const unknown = unknownKeys(issue);
    if (unknown.length > 0) {
      const where = path.length > 0 ? `${path.join('.')}: ` : '';
      const allowed = allowedKeys(netSchema, path);
      return unknown.map((k) => ({
        path: [...path, k],
        atKey: true,
        message: `${where}unknown key ${JSON.stringify(k)}${didYouMean(k, allowed)}`,
      }));
    }
    if (path.length > 0 && !hasPath(raw, path))
      return [{ path, atKey: true, message: `${path.join('.')}: missing (required)` }];
    return [{ path, message: describeIssue(issue) }];
  };
}

/**
 * The keys an issue says are unknown: those of an object, or of a map that matches none of a
 * union's forms only because of a key none of them has (`out: { one-off: [...] }`).
 */
function unknownKeys(issue: z.core.$ZodIssue): string[] {
  if (issue.code === 'unrecognized_keys') return issue.keys;
  if (issue.code !== 'invalid_union') return [];
  const perBranch = issue.errors
    .map((branch) => branch.flatMap((i) => (i.code === 'unrecognized_keys' && i.path.length === 0 ? i.keys : [])))
    .filter((keys) => keys.length > 0);
  if (perBranch.length === 0) return [];
  return perBranch[0]!.filter((k) => perBranch.every((keys) => keys.includes(k)));
}

/**
 * The file without the values the schema refused, to cross-check the rest. Each round takes out
 * what the issues point at (in a list, the whole list); refused again at the same place, its whole
 * entry goes (a place keeps its name, so that arcs naming it are not reported as unknown).
 */
function salvage(raw: unknown, issues: z.core.$ZodIssue[]): { data?: unknown; pruned: Path[] } {
  const data: unknown = structuredClone(raw);
  const pruned: Path[] = [];
  const done = new Set<string>();
  /** Take the value at `path` out, once: whether there was one to take. */
  const take = (path: Path): boolean => {
    const key = JSON.stringify(path);
    if (done.has(key)) return false;
    done.add(key);
    pruned.push(path);
    return takeOut(data, path);
  };
  for (let round = 0; round < 4; round++) {
    for (const issue of issues) {
      const unknown = unknownKeys(issue);
      const targets =
        unknown.length > 0 ? unknown.map((k) => [...(issue.path as Path), k]) : [wholeValueOf(issue.path as Path)];
      for (const path of targets) {
        // no places: nothing to cross-check
        if (path.length === 0 || (path[0] === 'places' && path.length === 1)) return { pruned };
        if (path.length >= 3 && take(path)) continue;
        // Refused again where a value was taken out, a required value missing, or an entry itself.
        const entry = path.slice(0, 2);
        if (entry.length === 1) {
          if (!take(entry)) return { pruned }; // a top-level key refused again
        } else if (entry[0] === 'places') keepPlace(data, String(entry[1]), pruned);
        else take(entry);
      }
    }
    const again = netSchema.safeParse(data);
    if (again.success) return { data: again.data, pruned };
    issues = again.error.issues;
  }
  return { pruned };
}

/** A path cut after its last key: a refused item of a list takes the whole list with it. */
function wholeValueOf(path: Path): Path {
  let end = path.length;
  while (end > 0 && typeof path[end - 1] === 'number') end--;
  return path.slice(0, end);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Delete the value at `path` (a key of a map): whether there was one. */
function takeOut(data: unknown, path: Path): boolean {
  let node = data;
  for (const k of path.slice(0, -1)) {
    if (!isRecord(node) && !Array.isArray(node)) return false;
    node = (node as Record<string | number, unknown>)[k];
  }
  const last = path[path.length - 1]!;
  if (!isRecord(node) || !Object.hasOwn(node, last)) return false;
  delete node[last];
  return true;
}

/** A place kept, without its settings (they were refused): arcs that name it are not in error. */
function keepPlace(data: unknown, place: string, pruned: Path[]): void {
  if (isRecord(data) && isRecord(data.places)) data.places[place] = {};
  pruned.push(['places', place]);
}

function hasPath(data: unknown, path: Path): boolean {
  let node = data;
  for (const k of path) {
    if (!(isRecord(node) || Array.isArray(node)) || !Object.hasOwn(node, k)) return false;
    node = (node as Record<string | number, unknown>)[k];
  }
  return true;
}

/** The keys that the maps at a path of the schema may have (of every form a union allows there). */
function allowedKeys(schema: z.core.$ZodType, keys: ReadonlyArray<PropertyKey>): string[] {
  const unwrap = (s: z.core.$ZodType): z.core.$ZodType[] => {
    if (s instanceof z.ZodOptional || s instanceof z.ZodNullable) return unwrap(s.unwrap());
    if (s instanceof z.ZodPipe) return unwrap(s.in);
    if (s instanceof z.ZodUnion) return s.options.flatMap(unwrap);
    return [s];
  };
  let here = unwrap(schema);
  for (const k of keys) {
    here = here.flatMap((s): z.core.$ZodType[] => {
      if (s instanceof z.ZodObject && typeof k === 'string' && k in s.shape) return unwrap(s.shape[k]!);
      if (s instanceof z.ZodRecord && typeof k === 'string') return unwrap(s.valueType);
      if (s instanceof z.ZodArray && typeof k === 'number') return unwrap(s.element);
      return [];
    });
  }
  return [...new Set(here.flatMap((s) => (s instanceof z.ZodObject ? Object.keys(s.shape) : [])))];
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  switch (issue.code) {
    case 'invalid_union':
      return `${where}not a valid value here`;
    default:
      return `${where}${issue.message}`;
  }
}
