#!/usr/bin/env node
// Print the figures of the last reliability run (test/reliability/.results/*.json) as Markdown,
// to update docs/reliability.md:  node test/reliability/summarize.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '.results');
if (!fs.existsSync(dir)) {
  console.error(`no results in ${dir}: run npx vitest run test/reliability first`);
  process.exit(1);
}
const results = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));

const first = results[0];
if (first)
  console.log(
    `Run: ${results.map((r) => r.date).sort()[0]}, Node ${first.node}` +
      `, ${first.cpus} CPUs, ${first.root ? 'root' : 'not root'}\n`,
  );

const flat = (obj, prefix = '') =>
  Object.entries(obj).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v) ? flat(v, `${prefix}${k}.`) : [[`${prefix}${k}`, v]],
  );

for (const r of results) {
  console.log(`### ${r.test}${r.seed !== undefined && r.seed !== null ? ` (seed ${r.seed})` : ''}\n`);
  console.log('| figure | value |\n| --- | --- |');
  for (const [k, v] of flat(r.figures)) console.log(`| ${k} | ${String(JSON.stringify(v)).replace(/\|/g, '\\|')} |`);
  console.log();
}
