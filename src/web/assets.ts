/**
 * A page's static assets, by exact URL path (the table is the only way to a file), read once from
 * the first of its folders that holds the page, and the style every page shares,
 * /assets/base.css. The folders: beside the page's module (src/..., or dist/... once built: the
 * build copies them), then where the bundle (dist/bundle/*.cjs) finds them.
 */
import fs from 'node:fs';
import type { Reply } from './server.js';

/** Route → file in the page's folder; the first entry is the page itself. */
export type AssetTable = Record<string, { file: string; type: string }>;

/** src/web/assets, dist/web/assets, or from the bundle ../web/assets. */
const BASE_DIRS = [new URL('./assets/', import.meta.url), new URL('../web/assets/', import.meta.url)];

function firstHolding(dirs: readonly URL[], file: string): URL {
  return dirs.find((d) => fs.existsSync(new URL(file, d))) ?? dirs[0]!;
}

/** The table's files from the first of `dirs` that holds its page, and the shared style. */
export function loadAssets(table: AssetTable, dirs: readonly URL[]): Map<string, Reply> {
  const dir = firstHolding(dirs, Object.values(table)[0]!.file);
  const out = new Map<string, Reply>();
  for (const [route, a] of Object.entries(table))
    out.set(route, { type: a.type, body: fs.readFileSync(new URL(a.file, dir)) });
  const base = firstHolding(BASE_DIRS, 'base.css');
  out.set('/assets/base.css', { type: 'text/css; charset=utf-8', body: fs.readFileSync(new URL('base.css', base)) });
  return out;
}
