/**
 * A net file read by the yaml package, which keeps every node's position: each problem is reported
 * as file:line:column, found by walking the problem's key path through the YAML document. Asked
 * when js-yaml could not read the file as plain YAML, or when its data has problems (netfile.ts).
 * Loaded then only, through require: a file that has no problem never compiles it.
 */
import type { Document, LineCounter, Node } from 'yaml';
import { NetFileError } from '../../base/errors.js';
import { requirePackage } from '../../sys/require-package.js';
import type { NetModel } from './model.js';
import { modelOfData } from './net-data.js';

interface Position {
  line: number;
  col: number;
}

type Yaml = typeof import('yaml');
let yamlModule: Yaml | undefined;
// When first needed: a net command without a problem to point at never needs it.
const yaml = (): Yaml => (yamlModule ??= requirePackage<Yaml>('yaml'));

/**
 * Where a problem is: the value at the end of the key path (or its key, for an unknown key);
 * for a missing key, the key of the map that lacks it.
 */
function positionOf(doc: Document, lc: LineCounter, keys: ReadonlyArray<PropertyKey>, atKey = false): Position {
  const { isMap, isNode, isSeq } = yaml();
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
  const { isScalar, visit } = yaml();
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
 * Parse and validate a net file's text with the yaml package; `file` names it in errors and anchors
 * relative paths. Every problem is reported at once, in file order: the schema's and the
 * cross-checks' (made on what the schema left). Only a YAML syntax error stops first: past it, the
 * structure is a guess.
 */
export function locatedNetText(text: string, file: string): NetModel {
  const { LineCounter, parseDocument } = yaml();
  const lc = new LineCounter();
  // Duplicate keys are found below: the yaml package's own check is quadratic in a map's size.
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: false });
  const at = (offset: number, message: string): Located => ({ ...lc.linePos(offset), message });
  const syntax = doc.errors.map((e) => at(e.pos[0], e.message.split('\n')[0]!));
  if (syntax.length > 0) throw new NetFileError(file, inFileOrder(syntax));
  const located: Located[] = duplicateKeys(doc).map((d) => at(d.at, d.message));
  const { model, problems } = modelOfData(doc.toJS() ?? {}, file);
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
