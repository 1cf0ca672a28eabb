/**
 * Net files: YAML (the `yaml` package, which keeps every node's position) validated by a zod
 * schema (schema.ts), then turned into the model. Every problem is reported as file:line:column,
 * found by walking the problem's key path through the YAML document.
 */
import fs from 'node:fs';
import path from 'node:path';
import { type Document, isMap, isNode, isScalar, isSeq, LineCounter, type Node, parseDocument, visit } from 'yaml';
import { NetFileError, systemErrorWords } from '../../base/errors.js';
import { buildNet } from './build.js';
import type { ModelProblem, NetDefinition, NetModel } from './model.js';
import { checkShape } from './schema.js';

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
      // The last of a key given twice: its value is the one the file's data holds.
      const pair = [...node.items]
        .reverse()
        .find((it) => (isNode(it.key) ? (it.key as { value?: unknown }).value : it.key) === k);
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

/**
 * Parse and validate a net file's text; `file` names it in errors and anchors relative paths.
 * Every problem is reported at once, in file order: the schema's and the cross-checks' (made on
 * what the schema left). Only a YAML syntax error stops first: past it, the structure is a guess.
 */
export function parseNetText(text: string, file: string): NetModel {
  const lc = new LineCounter();
  // Duplicate keys are found below: the yaml package's own check is quadratic in a map's size.
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: false });
  const at = (offset: number, message: string): Located => ({ ...lc.linePos(offset), message });
  const syntax = doc.errors.map((e) => at(e.pos[0], e.message.split('\n')[0]!));
  if (syntax.length > 0) throw new NetFileError(file, inFileOrder(syntax));
  const located: Located[] = duplicateKeys(doc).map((d) => at(d.at, d.message));
  const shape = checkShape(doc.toJS() ?? {});
  const problems = [...shape.problems];
  let model: NetModel | undefined;
  if (shape.data !== undefined) {
    const def = {
      ...(shape.data as Omit<NetDefinition, 'dir'>),
      dir: path.dirname(path.resolve(file)),
    } as NetDefinition;
    const built = buildNet(def, path.resolve(file));
    model = built.model;
    problems.push(...built.problems.filter((p) => !followsOn(p, shape.pruned)));
  }
  located.push(...problems.map((p) => ({ ...positionOf(doc, lc, p.path, p.atKey), message: p.message })));
  if (located.length > 0 || !model) throw new NetFileError(file, inFileOrder(located));
  return model;
}

interface Located extends Position {
  message: string;
}

/** Problems sorted by where they are (a stable sort: those at one place keep their order). */
function inFileOrder(problems: Located[]): Located[] {
  return problems.sort((a, b) => a.line - b.line || a.col - b.col);
}

/** A cross-check that finds missing a value the schema refused (and salvage took out) says nothing new. */
function followsOn(problem: ModelProblem, pruned: ReadonlyArray<ReadonlyArray<string | number>>): boolean {
  const absent = problem.absent;
  return absent !== undefined && pruned.some((p) => p.length <= absent.length && p.every((k, i) => k === absent[i]));
}

/** Read, parse and validate a net file. */
export function loadNetFile(file: string): NetModel {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new NetFileError(file, [
      { message: `cannot read the net file: ${systemErrorWords(err) ?? (err as Error).message}` },
    ]);
  }
  return parseNetText(text, file);
}
