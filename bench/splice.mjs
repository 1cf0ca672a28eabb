/**
 * Put a generated markdown section into a file between its begin and end markers (appended when
 * the file has none), so that one bench's figures are refreshed without the whole harness.
 */
import fs from 'node:fs';

export function spliceSection(file, md, begin, end) {
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const i = old.indexOf(begin);
  const j = old.indexOf(end);
  const next =
    i >= 0 && j > i ? `${old.slice(0, i)}${md.trimEnd()}${old.slice(j + end.length)}` : `${old.trimEnd()}\n\n${md}`;
  fs.writeFileSync(file, next);
}

/** docs/benchmarks.md's appendix: docs/benchmarks-notes.md (any FILE.md: FILE-notes.md). */
export function notesFile(file) {
  return file.replace(/(\.md)?$/, '-notes.md');
}

const squeeze = (lines) =>
  `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()}\n`;

/**
 * A generated section in two halves: the results (markers, headings, tables, failures) for the
 * page a person reads, and the measurement notes (the prose, under the same headings) for its
 * appendix, so that the page stays short.
 */
export function splitSection(md) {
  const tables = [];
  const notes = [];
  for (const line of md.split('\n')) {
    const both = /^(<!--|#|\*\*Failed\*\*)/.test(line) || line === '';
    if (both || line.startsWith('|')) tables.push(line);
    if (both || !line.startsWith('|')) notes.push(line);
  }
  return { tables: squeeze(tables), notes: squeeze(notes) };
}

/** spliceSection of the section's results into FILE and of its notes into notesFile(FILE). */
export function spliceSplit(file, md, begin, end) {
  const { tables, notes } = splitSection(md);
  spliceSection(file, tables, begin, end);
  spliceSection(notesFile(file), notes, begin, end);
}
