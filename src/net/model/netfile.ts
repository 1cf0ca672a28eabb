/**
 * Net files: YAML validated by a zod schema (schema.ts), then turned into the model (net-data.ts).
 * Read first by js-yaml when the file is plain YAML (plain-yaml.ts); a file that is not, or whose
 * data has a problem, is read again by the yaml package, which says where each problem is
 * (netfile-located.ts).
 */
import fs from 'node:fs';
import { NetFileError, systemErrorWords } from '../../base/errors.js';
import type { NetModel } from './model.js';
import { modelOfData } from './net-data.js';
import { locatedNetText } from './netfile-located.js';
import { plainYamlData } from './plain-yaml.js';

/** Parse and validate a net file's text; `file` names it in errors and anchors relative paths. */
export function parseNetText(text: string, file: string): NetModel {
  const data = plainYamlData(text);
  if (data !== undefined) {
    const { model, problems } = modelOfData(data, file);
    if (model && problems.length === 0) return model;
  }
  return locatedNetText(text, file);
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
