/**
 * Put a generated markdown section into a file between its begin and end markers (appended when
 * the file has none), so that one bench's figures are refreshed without the whole harness.
 */
import fs from 'node:fs';

export function spliceSection(file, md, begin, end) {
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const i = old.indexOf(begin);
  const j = old.indexOf(end);
  const next = i >= 0 && j > i ? `${old.slice(0, i)}${md.trimEnd()}${old.slice(j + end.length)}` : `${old.trimEnd()}\n\n${md}`;
  fs.writeFileSync(file, next);
}
