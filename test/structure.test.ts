/**
 * The layers stay honest: no module imports itself back through others at run time, the net
 * layer uses the queue API and never the packet codec's internals, and the CLI holds no logic
 * of the net layer's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from './helpers.js';

const SRC = path.join(ROOT, 'src');

function sources(dir = SRC): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Run-time imports (type-only ones are erased by the compiler and don't count). */
function imports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(?!type\b)([^;]*?)\s+from\s+'(\.[^']+)'/gms)) {
    const names = m[1]!.trim();
    if (/^\{[^}]*\}$/s.test(names) && names.replace(/[{}\s]/g, '').split(',').filter(Boolean).every((x) => x.startsWith('type'))) continue;
    out.push(path.resolve(path.dirname(file), m[2]!.replace(/\.js$/, '.ts')));
  }
  return out;
}

test('no import cycles among the modules of src/', () => {
  const graph = new Map(sources().map((f) => [f, imports(f)]));
  const cycles: string[] = [];
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, 1);
    stack.push(n);
    for (const d of graph.get(n) ?? []) {
      if (state.get(d) === 1) cycles.push(stack.slice(stack.indexOf(d)).map((x) => path.relative(SRC, x)).join(' -> '));
      else if (!state.get(d)) visit(d);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const f of graph.keys()) if (!state.get(f)) visit(f);
  expect(cycles).toEqual([]);
});

test('src/net uses the queue API and packet streams, never the codec internals', () => {
  const internals = ['packet/codec.ts', 'packet/msgpack.ts', 'packet/shape.ts', 'packet/read.ts'].map((f) => path.join(SRC, f));
  for (const f of sources(path.join(SRC, 'net'))) {
    const bad = imports(f).filter((d) => internals.includes(d));
    expect(bad.map((d) => path.relative(SRC, d)), path.relative(SRC, f)).toEqual([]);
  }
});

test('nothing below src/net imports it (the net layer sits on top), except the public entry points and the CLI', () => {
  const net = path.join(SRC, 'net');
  for (const f of sources()) {
    if (f.startsWith(net) || f.startsWith(path.join(SRC, 'cli')) || ['index.ts', 'lowlevel.ts'].includes(path.basename(f))) continue;
    expect(imports(f).filter((d) => d.startsWith(net)).map((d) => path.relative(SRC, d)), path.relative(SRC, f)).toEqual([]);
  }
});

test('the tests test the current source: the package name resolves to src/ (one copy of each class), and every test script builds first', async () => {
  // Through vitest.config.ts's aliases, as the tests import it; dist/ is for bin/fspl and the
  // tests of the package as published, which is why every script that runs vitest builds first.
  const [pkg, low, src, srcLow] = await Promise.all([import('filespooler'), import('filespooler/lowlevel'), import('../src/index.js'), import('../src/lowlevel.js')]);
  expect(pkg.Net).toBe(src.Net);
  expect(pkg.Queue).toBe(src.Queue);
  expect(low.processQueue).toBe(srcLow.processQueue);
  const scripts = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const testing = Object.entries(scripts).filter(([, cmd]) => /\bvitest\b/.test(cmd));
  expect(testing.map(([name]) => name)).toContain('test:unit');
  for (const [name, cmd] of testing) expect(cmd, name).toMatch(/^npm run build && /);
});
