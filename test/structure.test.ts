/**
 * The layers stay honest: no module imports itself back through others at run time, the net
 * layer uses the queue API and never the packet codec's internals (not even through a barrel),
 * the net's planner is pure, and the CLI holds no logic of the net layer's.
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

/** A file's dynamic imports, `import('./x.js')`, type positions (`typeof import(…)`) left out: the modules. */
function dynamicImports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/(?<!typeof\s)(?<![<:]\s*)\bimport\(\s*'(\.[^']+)'\s*\)/g)].map((m) =>
    path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')),
  );
}

/** Run-time imports, dynamic ones too (type-only ones are erased by the compiler and don't count). */
function imports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = dynamicImports(file);
  for (const m of text.matchAll(/^(?:import|export)\s+(?!type\b)([^;]*?)\s+from\s+'(\.[^']+)'/gms)) {
    const names = m[1]!.trim();
    if (
      /^\{[^}]*\}$/s.test(names) &&
      names
        .replace(/[{}\s]/g, '')
        .split(',')
        .filter(Boolean)
        .every((x) => x.startsWith('type'))
    )
      continue;
    out.push(path.resolve(path.dirname(file), m[2]!.replace(/\.js$/, '.ts')));
  }
  return out;
}

/** Named run-time imports of a file: [module, names] (names undefined: the whole module, `import *` or `export *`). */
function namedImports(file: string): Array<[string, string[] | undefined]> {
  const text = fs.readFileSync(file, 'utf8');
  const out: Array<[string, string[] | undefined]> = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(?!type\b)([^;]*?)\s+from\s+'(\.[^']+)'/gms)) {
    const target = path.resolve(path.dirname(file), m[2]!.replace(/\.js$/, '.ts'));
    const clause = m[1]!.trim();
    const braces = /\{([^}]*)\}/s.exec(clause);
    const names = braces
      ? braces[1]!
          .split(',')
          .map((x) => x.trim())
          .filter((x) => x && !x.startsWith('type '))
          .map((x) => x.split(/\s+as\s+/)[0]!.trim())
      : [];
    // A default or namespace import, or `export *`: the whole module.
    if (
      clause
        .replace(/\{[^}]*\}/s, '')
        .replace(/,/g, '')
        .trim()
    )
      out.push([target, undefined]);
    if (names.length) out.push([target, names]);
  }
  return out;
}

/** The module that declares `name` as reached from `file`: through barrels (export ... from) to its definition. */
function definer(file: string, name: string, seen = new Set<string>(), types = false): string | undefined {
  if (seen.has(file) || !fs.existsSync(file)) return undefined;
  seen.add(file);
  const text = fs.readFileSync(file, 'utf8');
  const kinds = types
    ? 'const|let|var|function\\*?|class|enum|interface|type'
    : 'const|let|var|function\\*?|class|enum';
  const declared = new RegExp(
    `^export\\s+(?:declare\\s+)?(?:abstract\\s+)?(?:async\\s+)?(?:${kinds})\\s+${name.replace(/\$/g, '\\$')}\\b`,
    'm',
  );
  if (declared.test(text)) return file;
  for (const m of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(\.[^']+)'/gms)) {
    for (const part of m[1]!.split(',').map((x) => x.trim())) {
      const [orig, alias] = part
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .map((x) => x.trim());
      if ((alias ?? orig) === name)
        return definer(path.resolve(path.dirname(file), m[2]!.replace(/\.js$/, '.ts')), orig!, seen, types);
    }
  }
  for (const m of text.matchAll(/^export\s+\*\s+from\s+'(\.[^']+)'/gm)) {
    const d = definer(path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')), name, seen, types);
    if (d) return d;
  }
  return undefined;
}

/**
 * Every module whose code a file's run-time imports reach by name, barrels followed (a whole-module import reaches the
 * barrel's every source).
 */
function reached(file: string): string[] {
  const out = new Set<string>();
  const whole = (m: string, seen: Set<string>) => {
    if (seen.has(m) || !fs.existsSync(m)) return;
    seen.add(m);
    out.add(m);
    for (const dep of reexports(m)) whole(dep, seen);
  };
  for (const [mod, names] of namedImports(file)) {
    if (names === undefined) whole(mod, new Set());
    else for (const n of names) out.add(definer(mod, n) ?? mod);
  }
  return [...out];
}

/** The modules a barrel re-exports from. */
function reexports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/^export\s+(?!type\b)[^;]*?\s+from\s+'(\.[^']+)'/gms)].map((m) =>
    path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')),
  );
}

/**
 * Every import of a file, type-only and dynamic ones too (a type import ties two modules as much as a value does): the
 * modules.
 */
function typedImports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const stat = [...text.matchAll(/^(?:import|export)\s+(?:type\s+)?[^;]*?\s+from\s+'(\.[^']+)'/gms)];
  const typeofs = [...text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g)];
  return [...stat, ...typeofs].map((m) => path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')));
}

/** The import cycles of a graph, each as a path of files relative to src/. */
function cyclesOf(graph: Map<string, string[]>): string[] {
  const cycles: string[] = [];
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, 1);
    stack.push(n);
    for (const d of graph.get(n) ?? []) {
      if (state.get(d) === 1)
        cycles.push(
          stack
            .slice(stack.indexOf(d))
            .map((x) => path.relative(SRC, x))
            .join(' -> '),
        );
      else if (!state.get(d)) visit(d);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const f of graph.keys()) if (!state.get(f)) visit(f);
  return cycles;
}

test('no import cycles among the modules of src/', () => {
  expect(cyclesOf(new Map(sources().map((f) => [f, imports(f)])))).toEqual([]);
});

test('no import cycles among the modules of src/, type imports counted', () => {
  expect(cyclesOf(new Map(sources().map((f) => [f, typedImports(f)])))).toEqual([]);
});

/**
 * The core's folders, lowest first (docs/architecture.md says what each holds and why it sits
 * where it does): a file may import (types too) from its own folder and the folders of lower
 * rank, never a higher one or one of the same rank. Above them all: the root's files (the public
 * entries, json.ts), the CLI and the net layer.
 */
const CORE_ORDER: Record<string, number> = {
  base: 0,
  sys: 1,
  web: 1,
  packet: 2,
  sign: 3,
  queue: 4,
  process: 5,
  status: 5,
  send: 5,
};

test('the core keeps its folder order: no import, type imports included, runs up or sideways', () => {
  const folders = fs
    .readdirSync(SRC, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== 'cli' && e.name !== 'net')
    .map((e) => e.name);
  expect(
    folders.filter((f) => !(f in CORE_ORDER)),
    'a folder of the core with no rank',
  ).toEqual([]);
  const folderOf = (f: string) => path.relative(SRC, f).split(path.sep)[0]!;
  const bad: string[] = [];
  for (const name of folders) {
    for (const f of sources(path.join(SRC, name))) {
      for (const d of typedImports(f)) {
        const to = folderOf(d);
        if (to === name) continue;
        if (!(to in CORE_ORDER) || CORE_ORDER[to]! >= CORE_ORDER[name]!)
          bad.push(`${path.relative(SRC, f)} -> ${path.relative(SRC, d)}`);
      }
    }
  }
  expect(bad).toEqual([]);
});

test('test/ mirrors the core: a test of a module sits in its folder', () => {
  const misplaced: string[] = [];
  for (const name of Object.keys(CORE_ORDER).filter((n) => fs.existsSync(path.join(SRC, n)))) {
    for (const f of sources(path.join(SRC, name))) {
      const base = path.basename(f, '.ts');
      const here = path.join(ROOT, 'test', name, `${base}.test.ts`);
      const atRoot = path.join(ROOT, 'test', `${base}.test.ts`);
      if (fs.existsSync(atRoot) && !fs.existsSync(here))
        misplaced.push(`test/${base}.test.ts (its module is src/${name}/${base}.ts)`);
    }
  }
  expect(misplaced).toEqual([]);
});

/**
 * The folders of src/net, lowest first: a file may import (types too) from its own folder and
 * the folders below it, never above. docs/architecture.md says why each sits where it does.
 */
const NET_ORDER = ['model', 'plan', 'place', 'commit', 'operate', 'run', 'hosts', 'observe'];

test('src/net keeps its folder order: no import, type imports included, runs up to a higher folder', () => {
  const net = path.join(SRC, 'net');
  const rankOf = (f: string) => NET_ORDER.indexOf(path.relative(net, f).split(path.sep)[0]!);
  const folders = fs
    .readdirSync(net, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  expect(folders.sort()).toEqual([...NET_ORDER].sort());
  const up: string[] = [];
  for (const f of sources(net)) {
    if (path.dirname(f) === net) continue; // the facade (index.ts) stands above them all
    for (const d of typedImports(f)) {
      if (d.startsWith(net + path.sep) && (path.dirname(d) === net || rankOf(d) > rankOf(f)))
        up.push(`${path.relative(SRC, f)} -> ${path.relative(SRC, d)}`);
    }
  }
  expect(up).toEqual([]);
});

test('src/net uses the queue API and packet streams, never the codec internals', () => {
  const internals = ['packet/codec.ts', 'packet/msgpack.ts', 'packet/shape.ts', 'packet/read.ts'].map((f) =>
    path.join(SRC, f),
  );
  for (const f of sources(path.join(SRC, 'net'))) {
    const bad = imports(f).filter((d) => internals.includes(d));
    expect(
      bad.map((d) => path.relative(SRC, d)),
      path.relative(SRC, f),
    ).toEqual([]);
  }
});

test('src/net reaches no codec internal by any way, barrels included (packet/index re-exports some)', () => {
  const internals = ['packet/codec.ts', 'packet/msgpack.ts', 'packet/shape.ts', 'packet/read.ts'].map((f) =>
    path.join(SRC, f),
  );
  // Internals that live beside public functions: the queue and packet-stream APIs cover what the net needs.
  const internalNames = [
    'readHeaderSync',
    'readHeaderAndLengthSync',
    'crc32Update',
    'fdOffset',
    'decodeHeader',
    'decodePrefix',
    'decodeMetadata',
    'encodeHeader',
  ];
  for (const f of sources(path.join(SRC, 'net'))) {
    const bad = reached(f).filter((d) => internals.includes(d));
    expect(
      bad.map((d) => path.relative(SRC, d)),
      path.relative(SRC, f),
    ).toEqual([]);
    const names = namedImports(f)
      .filter(([mod]) => mod.startsWith(path.join(SRC, 'packet')))
      .flatMap(([, n]) => n ?? [])
      .filter((n) => internalNames.includes(n));
    expect(names, path.relative(SRC, f)).toEqual([]);
  }
});

test(
  'src/net/plan is pure: no node: module, no clock or ' + 'timer, nothing outside plan/ and model/ (errors aside)',
  () => {
    const plan = path.join(SRC, 'net', 'plan');
    const model = path.join(SRC, 'net', 'model');
    // Error classes are values, not I/O: the planner may throw them.
    const allowed = (d: string) =>
      d.startsWith(plan + path.sep) || d.startsWith(model + path.sep) || d === path.join(SRC, 'base', 'errors.ts');
    const files = sources(plan);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const rel = path.relative(SRC, f);
      const text = fs.readFileSync(f, 'utf8');
      const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
      expect(
        [...text.matchAll(/from\s+'(node:[^']+)'/g)].map((m) => m[1]),
        rel,
      ).toEqual([]);
      expect(
        code.match(/\b(?:Date\.now|new Date|performance\.now|setTimeout|setInterval|setImmediate|process\.)/g) ?? [],
        rel,
      ).toEqual([]);
      const outside = [...new Set([...typedImports(f), ...reached(f)])].filter((d) => !allowed(d));
      expect(
        outside.map((d) => path.relative(SRC, d)),
        rel,
      ).toEqual([]);
    }
  },
);

test(
  'test/net mirrors src/net: every folder of tests has its ' +
    'folder of modules, and every folder of modules its tests',
  () => {
    const tests = path.join(ROOT, 'test', 'net');
    const dirs = (d: string) =>
      fs
        .readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    const folders = dirs(tests);
    expect(folders.length).toBeGreaterThan(0);
    for (const d of folders) expect(fs.existsSync(path.join(SRC, 'net', d)), `test/net/${d}`).toBe(true);
    for (const d of dirs(path.join(SRC, 'net'))) expect(fs.existsSync(path.join(tests, d)), `src/net/${d}`).toBe(true);
  },
);

/** The public entries: filespooler, filespooler/lowlevel and filespooler/net (package.json "exports"). */
const ENTRIES = ['index.ts', 'lowlevel.ts', 'net-tools.ts'].map((f) => path.join(SRC, f));

test('nothing below src/net imports it (the net layer sits on top), except the public entry points and the CLI', () => {
  const net = path.join(SRC, 'net');
  for (const f of sources()) {
    if (f.startsWith(net) || f.startsWith(path.join(SRC, 'cli')) || ENTRIES.includes(f)) continue;
    expect(
      imports(f)
        .filter((d) => d.startsWith(net))
        .map((d) => path.relative(SRC, d)),
      path.relative(SRC, f),
    ).toEqual([]);
  }
});

test(
  'the tests test the current source: the package name resolves to ' +
    'src/ (one copy of each class), and every test script builds first',
  async () => {
    // Through vitest.config.ts's aliases, as the tests import it; dist/ is for bin/fspl and the
    // tests of the package as published, which is why every script that runs vitest builds first
    // (build:quick: only when dist/ is older than its inputs).
    const [pkg, low, src, srcLow] = await Promise.all([
      import('filespooler'),
      import('filespooler/lowlevel'),
      import('../src/index.js'),
      import('../src/lowlevel.js'),
    ]);
    expect(pkg.Net).toBe(src.Net);
    expect(pkg.Queue).toBe(src.Queue);
    expect(low.processQueue).toBe(srcLow.processQueue);
    const scripts = (
      JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    const testing = Object.entries(scripts).filter(([, cmd]) => /\bvitest\b/.test(cmd));
    expect(testing.map(([name]) => name)).toContain('test:unit');
    for (const [name, cmd] of testing) expect(cmd, name).toMatch(/^npm run build:quick && /);
    expect(scripts['build:quick']).toBe('node scripts/build-if-stale.mjs');
  },
);

/** Every import of a file, type-only ones too: [module, names imported] (undefined: a default or namespace import). */
function allImports(file: string): Array<[string, string[] | undefined]> {
  const text = fs.readFileSync(file, 'utf8');
  const out: Array<[string, string[] | undefined]> = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(?:type\s+)?([^;]*?)\s+from\s+'(\.[^']+)'/gms)) {
    const target = path.resolve(path.dirname(file), m[2]!.replace(/\.js$/, '.ts'));
    const braces = /^\{([^}]*)\}$/s.exec(m[1]!.trim());
    const names = braces
      ? braces[1]!
          .split(',')
          .map((x) =>
            x
              .trim()
              .replace(/^type\s+/, '')
              .split(/\s+as\s+/)[0]!
              .trim(),
          )
          .filter(Boolean)
      : undefined;
    out.push([target, names]);
  }
  return out;
}

test('the CLI uses the public API only: the net layer through the entries, and no name that no entry exports', () => {
  // The net layer is reached through the entries' files (its modules move; the entries follow
  // them). The core may be imported from the module that defines a name, so that the bundle of
  // the common path loads only what it uses, but only a name that a public entry exports too.
  const cli = path.join(SRC, 'cli');
  const bypass: string[] = [];
  for (const f of sources(cli)) {
    for (const [mod, names] of allImports(f)) {
      if (mod.startsWith(cli + path.sep) || ENTRIES.includes(mod)) continue;
      const where = `${path.relative(SRC, f)} imports ${path.relative(SRC, mod)}`;
      if (mod.startsWith(path.join(SRC, 'net') + path.sep))
        bypass.push(`${where} (the net layer: import it through an entry)`);
      else if (names === undefined) bypass.push(`${where} whole`);
      else {
        for (const n of names) {
          const source = definer(mod, n, new Set(), true);
          if (!source || !ENTRIES.some((e) => definer(e, n, new Set(), true) === source))
            bypass.push(`${where}: ${n}, which no entry exports`);
        }
      }
    }
  }
  expect(bypass).toEqual([]);
});

test(
  'no file in src/ over 400 lines, and no function ' + 'over 80 lines without a comment saying why it is one',
  async () => {
    const ts = (await import('typescript')).default;
    const long: string[] = [];
    const big: string[] = [];
    for (const file of sources()) {
      const text = fs.readFileSync(file, 'utf8');
      const lines = text.split('\n');
      const rel = path.relative(ROOT, file);
      if (lines.length > 400) big.push(`${rel}: ${lines.length} lines`);
      const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: import('typescript').Node): void => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          const first = src.getLineAndCharacterOfPosition(node.getStart()).line;
          const last = src.getLineAndCharacterOfPosition(node.end).line;
          // The reason is written just above it: its doc comment or a line comment.
          const above = lines.slice(Math.max(0, first - 12), first).join('\n');
          if (last - first + 1 > 80 && !/One function/.test(above))
            long.push(`${rel}:${first + 1} (${last - first + 1} lines)`);
        }
        ts.forEachChild(node, visit);
      };
      visit(src);
    }
    expect(big).toEqual([]);
    expect(long).toEqual([]);
  },
);

test(
  'one spawner: only sys/exec.ts (and its chained start, sys/exec-chain.ts) starts processes ' +
    '(node:child_process at run time) and calls the addon to spawn',
  () => {
    const spawners: string[] = [];
    const allowed = ['exec.ts', 'exec-chain.ts', 'native.ts', 'native-spawn.ts'].map((f) => path.join('sys', f));
    for (const file of sources()) {
      const rel = path.relative(SRC, file);
      if (allowed.includes(rel)) continue;
      const text = fs.readFileSync(file, 'utf8');
      if (/^import\s+(?!type\b)[^;]*from\s+'node:child_process'/m.test(text) || /\bnative(Spawn\w*|Chain)\(/.test(text))
        spawners.push(rel);
    }
    expect(spawners).toEqual([]);
  },
);

/**
 * Files are made and opened where others may write only through sys/untrusted.ts
 * (docs/security.md): no open that truncates or follows a link to make a file ('w', 'a', O_TRUNC,
 * O_CREAT without O_EXCL), no writeFileSync, appendFileSync or createWriteStream by name, no
 * recursive rm (which follows a name swapped for a link mid-way); and, outside packet/ and cli/
 * (which read files their user names), no read that follows a link. A line of this kind
 * elsewhere is a way back for the attacks of issue 38.
 */
test('files are made only through sys/untrusted.ts: no following opens that create or truncate', () => {
  const rules: Array<[RegExp, string]> = [
    [/\.open(Sync)?\([^)]*,\s*'[wa]\+?'/, "an open with 'w' or 'a'"],
    [/\bO_TRUNC\b/, 'O_TRUNC'],
    [/\bO_CREAT\b(?![^\n]*\bO_EXCL\b)/, 'O_CREAT without O_EXCL'],
    [
      /(^|[^.\w]|\bfs\.)(writeFileSync|appendFileSync|createWriteStream|promises\.writeFile|promises\.appendFile)\(/,
      'a write by name',
    ],
    [/\b(rmSync|promises\.rm)\([^)]*recursive/, 'a recursive rm'],
    [/\bcopyFileSync\((?![^)]*COPYFILE_EXCL)/, 'a copy over what is there'],
  ];
  // Reads that follow a link: only of a file its user named (packet/: prepare -i, readPacket's
  // path; cli/: an input file), never of one in a queue, a place or a staging directory.
  const followingRead: [RegExp, string] = [
    /\.open(Sync)?\([^)]*,\s*'r'|createReadStream\(\s*(?!'')/,
    "a read that follows a link ('r', createReadStream by name)",
  ];
  const found: string[] = [];
  for (const file of sources()) {
    const rel = path.relative(SRC, file);
    if (rel === path.join('sys', 'untrusted.ts')) continue;
    const own =
      rel.startsWith(`packet${path.sep}`) || rel.startsWith(`cli${path.sep}`) ? rules : [...rules, followingRead];
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (/^\s*(\*|\/\/)/.test(line)) return; // comments
      for (const [re, what] of own) if (re.test(line)) found.push(`${rel}:${i + 1}: ${what}`);
    });
  }
  expect(found).toEqual([]);
});
