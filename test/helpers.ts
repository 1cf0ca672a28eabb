/** Shared helpers for the unit tests. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Golden packets written by the reference (copied from shared/vectors; see their README). */
export const VECTORS = path.join(ROOT, 'test', 'fixtures', 'vectors');
export const FSPL_BIN = path.join(ROOT, 'bin', 'fspl');

const dirs: string[] = [];

/** A fresh temporary directory, removed after the test. */
export function tempDir(prefix = 'fspl-test-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
