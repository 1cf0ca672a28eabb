/**
 * A net file's data read by js-yaml, when the file is plain YAML: one document, no directive, no
 * tag, no alias, and no key that YAML's core schema reads as null. The yaml package reads every
 * file too, slowly, and keeps each node's position: netfile.ts asks it only when this gives
 * nothing, or when the data has a problem to point at. For a plain file the two give the same
 * data (test/net/model/plain-yaml.test.ts compares them); the files that are not plain are those
 * where they may differ: `%YAML 1.1` makes `yes` true for yaml alone, and a `null:` key is "null"
 * for js-yaml and "" for yaml.
 *
 * Why two readers: js-yaml reads a net file several times faster than yaml, small or large, and
 * every `fspl net` command reads its net file first (docs/benchmarks-notes.md, "Reading net files").
 */
import {
  CORE_SCHEMA,
  constructFromEvents,
  EVENT_ID,
  type Event,
  getScalarValue,
  parseEvents,
  SCALAR_STYLE,
} from 'js-yaml';

/** Plain scalars that the core schema reads as null. */
const NULL_SCALAR = /^(?:~|null|Null|NULL|)$/;

/** The file's data, or undefined when it is not plain YAML or js-yaml refuses it (netfile.ts then asks yaml). */
export function plainYamlData(text: string): unknown {
  let events: Event[];
  try {
    events = parseEvents(text, {});
  } catch {
    return undefined;
  }
  if (!isPlain(events, text)) return undefined;
  try {
    const docs = constructFromEvents(events, { source: text, schema: CORE_SCHEMA, maxAliases: 0 });
    return docs.length === 1 ? docs[0] : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the events are of one plain document (this file's comment says what plain is). */
function isPlain(events: readonly Event[], text: string): boolean {
  // Each open document, mapping (nodes read in it so far: even, the next is a key) or sequence.
  const open: Array<{ map: boolean; n: number }> = [];
  let documents = 0;
  for (const e of events) {
    if (e.type === EVENT_ID.POP) {
      open.pop();
      continue;
    }
    if (e.type === EVENT_ID.DOCUMENT) {
      if (e.directives.length > 0 || ++documents > 1) return false;
      open.push({ map: false, n: 0 });
      continue;
    }
    if (e.type === EVENT_ID.ALIAS || e.tagStart !== -1) return false;
    const parent = open[open.length - 1];
    if (parent?.map && parent.n++ % 2 === 0) {
      if (e.type !== EVENT_ID.SCALAR) return false;
      if (e.style === SCALAR_STYLE.PLAIN && NULL_SCALAR.test(getScalarValue(text, e))) return false;
    }
    if (e.type !== EVENT_ID.SCALAR) open.push({ map: e.type === EVENT_ID.MAPPING, n: 0 });
  }
  return documents === 1;
}
