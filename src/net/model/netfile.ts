/**
 * Net files: YAML (the `yaml` package, which keeps every node's position) validated by a zod
 * schema, then turned into the model. Every problem is reported as file:line:column, found by
 * walking the problem's key path through the YAML document.
 */
import fs from 'node:fs';
import path from 'node:path';
import { LineCounter, isMap, isNode, isScalar, isSeq, parseDocument, visit, type Document, type Node } from 'yaml';
import * as z from 'zod';
import { NetFileError, systemErrorWords } from '../../errors.js';
import { buildNet } from './build.js';
import type { NetDefinition, NetModel } from './model.js';
import { didYouMean } from '../../suggest.js';

const name = z.string();
const positiveInt = z.number().int().min(1);
const seconds = z.number().positive();

const placeSchema = z
  .object({
    dir: z.string().min(1).optional(),
    order: z.enum(['sequence', 'arrival']).optional(),
    capacity: positiveInt.optional(),
    // Read by the distributed layer.
    host: name.optional(),
    sync: z.boolean().optional(),
  })
  .strict();

const arcSchema = z.union([name, z.object({ place: name, take: positiveInt.optional(), 'max-wait': seconds.optional() }).strict()]);

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
    places: z.record(z.string(), placeSchema.nullable().transform((p) => p ?? {})),
    transitions: z.record(z.string(), transitionSchema).optional(),
    hosts: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export interface Position {
  line: number;
  col: number;
}

/**
 * Where a problem is: the value at the end of the key path (or its key, for an unknown key);
 * for a missing key, the key of the map that lacks it.
 */
function positionOf(doc: Document, lc: LineCounter, keys: ReadonlyArray<PropertyKey>, atKey = false): Position {
  let node: unknown = doc.contents;
  let keyOffset = (doc.contents as Node | null)?.range?.[0] ?? 0;
  let valueOffset = keyOffset;
  let found = true;
  for (const k of keys) {
    if (isMap(node)) {
      const pair = node.items.find((it) => (isNode(it.key) ? (it.key as { value?: unknown }).value : it.key) === k);
      if (!pair) {
        found = false;
        break;
      }
      keyOffset = (pair.key as Node | undefined)?.range?.[0] ?? keyOffset;
      node = pair.value;
      valueOffset = isNode(node) ? (node.range?.[0] ?? keyOffset) : keyOffset;
    } else if (isSeq(node) && typeof k === 'number' && node.items[k]) {
      node = node.items[k];
      valueOffset = keyOffset = (node as Node).range?.[0] ?? keyOffset;
    } else {
      found = false;
      break;
    }
  }
  const { line, col } = lc.linePos(found && !atKey ? valueOffset : keyOffset);
  return { line, col };
}

/**
 * Keys that a map has twice (a scalar key with the value of one before it), where they are: what
 * the yaml package's `uniqueKeys` reports, found with a set per map.
 */
function duplicateKeys(doc: Document): Array<{ at: number; message: string }> {
  const out: Array<{ at: number; message: string }> = [];
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        if (seen.has(pair.key.value)) out.push({ at: pair.key.range?.[0] ?? 0, message: 'Map keys must be unique' });
        seen.add(pair.key.value);
      }
    },
  });
  return out;
}

/** Parse and validate a net file's text; `file` names it in errors and anchors relative paths. */
export function parseNetText(text: string, file: string): NetModel {
  const lc = new LineCounter();
  // Duplicate keys are found below: the yaml package's own check compares each key with every
  // key before it, quadratic in a map's size (seconds for a net of 10,000 places).
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: false });
  const errors = [...doc.errors.map((e) => ({ at: e.pos[0], message: e.message.split('\n')[0]! })), ...duplicateKeys(doc)];
  if (errors.length > 0) {
    throw new NetFileError(
      file,
      errors
        .sort((a, b) => a.at - b.at)
        .map((e) => {
          const { line, col } = lc.linePos(e.at);
          return { line, col, message: e.message };
        }),
    );
  }
  const raw = doc.toJS();
  const parsed = netSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw new NetFileError(
      file,
      parsed.error.issues.flatMap((issue) => {
        // Each unknown key on its own line, at its own position, with the allowed key it is
        // probably a typo of.
        const unknown = issue.code === 'unrecognized_keys' ? issue.keys : issue.code === 'invalid_union' ? unknownInEveryObject(issue) : [];
        if (unknown.length > 0) {
          const where = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
          const allowed = allowedKeys(netSchema, issue.path);
          return unknown.map((k) => ({ ...positionOf(doc, lc, [...issue.path, k], true), message: `${where}unknown key ${JSON.stringify(k)}${didYouMean(k, allowed)}` }));
        }
        const missing = issue.path.length > 0 && !doc.hasIn(issue.path as unknown[]);
        const message = missing ? `${issue.path.join('.')}: missing (required)` : describeIssue(issue);
        return [{ ...positionOf(doc, lc, issue.path), message }];
      }),
    );
  }
  const def = { ...(parsed.data as unknown as Omit<NetDefinition, 'dir'>), dir: path.dirname(path.resolve(file)) } as NetDefinition;
  const { model, problems } = buildNet(def, path.resolve(file));
  if (!model) throw new NetFileError(file, problems.map((p) => ({ ...positionOf(doc, lc, p.path, p.atKey), message: p.message })));
  return model;
}

/**
 * A map that matches none of a union's forms only because of a key none of them has (`out:
 * { one-off: [...] }`): that key, rather than "not a valid value".
 */
function unknownInEveryObject(issue: z.core.$ZodIssueInvalidUnion): string[] {
  const perBranch = issue.errors
    .map((branch) => branch.flatMap((i) => (i.code === 'unrecognized_keys' && i.path.length === 0 ? i.keys : [])))
    .filter((keys) => keys.length > 0);
  if (perBranch.length === 0) return [];
  return perBranch[0]!.filter((k) => perBranch.every((keys) => keys.includes(k)));
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

/** Read, parse and validate a net file. */
export function loadNetFile(file: string): NetModel {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new NetFileError(file, [{ message: `cannot read the net file: ${systemErrorWords(err) ?? (err as Error).message}` }]);
  }
  return parseNetText(text, file);
}
