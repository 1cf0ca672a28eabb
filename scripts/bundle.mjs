#!/usr/bin/env node
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
/**
 * The CLI bundle, dist/bundle/*.cjs, which bin/fspl loads (run by `npm run build`, after tsc).
 *
 * Why CommonJS, in two passes: start-up is most of what a short fspl command costs, and an ES
 * module entry costs more than Node itself can spare. Measured on Node 20.20 (docs/benchmarks-notes.md,
 * "Where our start-up time goes"): an empty .mjs file takes about 4 ms more CPU than an empty
 * .cjs one (the ES module loader is set up, and it reads files on libuv's thread pool), and an ES
 * module importing a built-in module (`import fs from 'node:fs'`) gets a facade that reads every
 * export, so lazily loaded parts of Node come in whether used or not (fs's streams and promises,
 * util's parseArgs...). esbuild splits code into lazily loaded chunks only in the ES module
 * format, so the first pass bundles as ES modules with splitting (a subcommand loads only the
 * chunks it uses), and the second turns each chunk into CommonJS: its static imports become
 * require() calls, its dynamic imports require() calls in a promise. The chunks keep their
 * names, with `.cjs` (which Node loads as CommonJS whatever package.json says).
 */
import { build, transform } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = path.join(ROOT, 'dist', 'bundle');

/**
 * Packages left out of the bundle, loaded from node_modules at run time: fs-ext (a native addon),
 * crc-32 (required by the packet codec on its first header, through createRequire, so that a
 * command that decodes no header in JavaScript does not build its tables).
 */
export const EXTERNAL = ['fs-ext', 'crc-32'];

const common = { platform: 'node', target: 'node20', minifyWhitespace: true, minifySyntax: true, logLevel: 'warning' };

/**
 * The ES module chunks of the CLI, in memory: path relative to OUT → text, and the groups of
 * the common path (commonPath).
 */
async function esmChunks() {
  const result = await build({
    ...common,
    absWorkingDir: ROOT, // the metafile's paths are relative to it (commonPath)
    entryPoints: [path.join(ROOT, 'dist', 'cli', 'main.js')],
    bundle: true,
    splitting: true,
    format: 'esm',
    outdir: OUT,
    external: EXTERNAL,
    // A package's ES module build where it has one (@msgpack/msgpack): esbuild then leaves out what
    // is not imported (its encoder, its stream decoder), code that every command would load.
    mainFields: ['module', 'main'],
    write: false,
    metafile: true,
  });
  const chunks = result.outputFiles.map((f) => [path.relative(OUT, f.path), f.text]);
  return { chunks, common: commonPath(result.metafile) };
}

/**
 * The chunks of the common path, in groups: `start`, the entry and what it imports statically
 * (all that `fspl -V` loads); `commands`, the subcommands' handlers (commands.ts) and what they
 * import statically beyond that (all that `queue-process` of an empty queue loads besides);
 * `light`, the same for the trivial subcommands (standalone-commands.ts: gen-uuid...). A chunk both of the
 * latter import goes in `start`. `write`, what `queue-write` and `prepare` load beyond those to
 * copy a packet in or make one (write-from-fd.ts, packet/prepare.ts, sealed-copy.ts: the codec,
 * the seal and signature checks), in one file rather than one a chunk. Chunk name → group.
 */
function commonPath(metafile) {
  const outputs = Object.entries(metafile.outputs).map(([file, o]) => [
    path.relative(OUT, path.resolve(ROOT, file)),
    o,
  ]);
  const byName = new Map(outputs);
  const closure = (entry) => {
    const root = outputs.find(([, o]) => o.entryPoint === entry)?.[0];
    if (!root) throw new Error(`the bundle has no ${entry} entry`);
    const seen = new Set();
    const visit = (name) => {
      if (seen.has(name)) return;
      seen.add(name);
      for (const i of byName.get(name).imports)
        if (i.kind === 'import-statement' && !i.external) visit(path.relative(OUT, path.resolve(ROOT, i.path)));
    };
    visit(root);
    return seen;
  };
  const start = closure('dist/cli/main.js');
  const commands = closure('dist/cli/commands/commands.js');
  const light = closure('dist/cli/commands/standalone-commands.js');
  const groups = new Map([...start].map((name) => [name, 'start']));
  for (const name of commands) if (!groups.has(name)) groups.set(name, light.has(name) ? 'start' : 'commands');
  for (const name of light) if (!groups.has(name)) groups.set(name, 'light');
  for (const entry of ['dist/queue/write-from-fd.js', 'dist/packet/prepare.js', 'dist/packet/seal/sealed-copy.js'])
    for (const name of closure(entry)) if (!groups.has(name)) groups.set(name, 'write');
  return groups;
}

/**
 * One chunk as CommonJS. `import.meta.dirname` (native.ts finds the addon from it) becomes the
 * chunk file's directory, and `import.meta.url` (serve.ts finds its files beside its module, the
 * codec and the lock their packages) the chunk file's URL, made when first read: pathToFileURL
 * is slow for what it does, and most commands never read it. Imports of other chunks name them
 * with `.cjs`.
 */
async function toCommonJs(name, text) {
  const { code } = await transform(text, {
    ...common,
    format: 'cjs',
    // import() becomes a require() in a promise: chunks load through the CommonJS loader.
    supported: { 'dynamic-import': false },
    define: { 'import.meta.url': '__fsplModule.url', 'import.meta.dirname': '__dirname' },
    sourcefile: name,
  });
  const renamed = ownExports(code)
    .replace(/require\("(\.\/[^"]+)\.js"\)/g, 'require("$1.cjs")')
    // A default import of a node: module (`import fs from 'node:fs'`) is a namespace object that
    // esbuild's __toESM fills with a getter per export, a hundred for node:fs, in every chunk that
    // imports it: about a millisecond of every start. An object that inherits from the module
    // reads the same (`.default`, and any export), with nothing copied.
    .replace(/__toESM\(require\("(node:[\w/]+)"\)\)/g, '__fsplBuiltin(require("$1"))');
  const helpers = [
    /\b__fsplModule\b/.test(renamed) &&
      'let __fsplUrl;const __fsplModule={get url(){return __fsplUrl??=require("url").pathToFileURL(__filename).href}};',
    /\b__fsplBuiltin\b/.test(renamed) &&
      'const __fsplBuiltin=(m)=>Object.create(m,{default:{value:m,enumerable:true}});',
  ];
  return `"use strict";\n${helpers.filter(Boolean).join('\n')}\n${renamed}`;
}

/**
 * A chunk's exports object as its module.exports. esbuild's __toCommonJS copies the exports object,
 * each export a second getter that calls the first, in every chunk at load: a chunk that reads
 * another's export then goes through two getters each time. The object itself, marked
 * `__esModule` as the copy was, reads the same. Text without the pattern is left as it is.
 */
function ownExports(code) {
  const defProp = /\b__toCommonJS=mod=>__copyProps\((\w+)\(\{\},"__esModule",\{value:!0\}\),mod\)/.exec(code)?.[1];
  if (!defProp) return code;
  return code.replace(
    /module\.exports=__toCommonJS\((\w+)\);/g,
    `module.exports=${defProp}($1,"__esModule",{value:!0});`,
  );
}

/**
 * A file's text as the function Node wraps a CommonJS module in. Each file of the bundle is written
 * so, ready to compile: bin/fspl wrapping the text itself would make a second copy of it (the
 * source joined to the wrapper is flattened into a new string when compiled).
 */
const asFunction = (text) => `(function (exports, require, module, __filename, __dirname) {${text}\n})`;

/**
 * Write the chunks: each group of the common path in one file, group-NAME.cjs, its chunks as the
 * functions Node would wrap them in, by name (bin/fspl runs one when it is first required), and
 * the other chunks one a file. group-start.cjs also says which group holds each other grouped
 * chunk. Two files to read and compile for `queue-process` instead of some twenty: about 1.5 ms
 * of CPU at each start. Every file is a function (asFunction).
 */
export async function bundle() {
  const { chunks, common } = await esmChunks();
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  const groups = { start: [], commands: [], light: [], write: [] };
  const where = {};
  for (const [name, text] of chunks) {
    if (!name.endsWith('.js')) throw new Error(`unexpected bundle output ${name}`);
    const cjsName = name.replace(/\.js$/, '.cjs');
    const code = await toCommonJs(name, text);
    const group = common.get(name);
    if (!group) {
      fs.writeFileSync(path.join(OUT, cjsName), asFunction(code));
      continue;
    }
    groups[group].push(
      `${JSON.stringify(cjsName)}: function (exports, require, module, __filename, __dirname) {${code}\n}`,
    );
    if (group !== 'start') where[cjsName] = `group-${group}.cjs`;
  }
  for (const [group, members] of Object.entries(groups)) {
    const elsewhere = group === 'start' ? `\nmodule.exports.groups = ${JSON.stringify(where)};` : '';
    const text =
      `"use strict";\n// Chunks of the CLI bundle by name (scripts/bundle.mjs).\n` +
      `module.exports = { chunks: {\n${members.join(',\n')}\n} };${elsewhere}\n`;
    fs.writeFileSync(path.join(OUT, `group-${group}.cjs`), asFunction(text));
  }
  fs.writeFileSync(path.join(OUT, 'quick.cjs'), asFunction(await quickFile()));
}

/**
 * quick.cjs: src/cli/quick.ts and what it imports, in one file that shares no chunk with the CLI
 * (a shared chunk would be read from group-start.cjs, the CLI's own start): what bin/fspl runs
 * first for a `queue-process` (the run over an empty queue, src/process/empty-queue.ts).
 */
async function quickFile() {
  const result = await build({
    ...common,
    entryPoints: [path.join(ROOT, 'dist', 'cli', 'quick.js')],
    bundle: true,
    format: 'esm',
    external: EXTERNAL,
    write: false,
  });
  return toCommonJs('quick.js', result.outputFiles[0].text);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  bundle().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
