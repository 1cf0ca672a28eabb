#!/usr/bin/env node
/**
 * The CLI bundle, dist/bundle/*.cjs, which bin/fspl loads (run by `npm run build`, after tsc).
 *
 * Why CommonJS, in two passes: start-up is most of what a short fspl command costs, and an ES
 * module entry costs more than Node itself can spare. Measured on Node 20.20 (docs/benchmarks.md,
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
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = path.join(ROOT, 'dist', 'bundle');

/** Packages left out of the bundle, loaded from node_modules at run time (fs-ext: a native addon). */
export const EXTERNAL = ['fs-ext'];

const common = { platform: 'node', target: 'node20', minifyWhitespace: true, minifySyntax: true, logLevel: 'warning' };

/** The ES module chunks of the CLI, in memory: path relative to OUT → text. */
async function esmChunks() {
  const result = await build({
    ...common,
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
  });
  return result.outputFiles.map((f) => [path.relative(OUT, f.path), f.text]);
}

/**
 * One chunk as CommonJS. `import.meta.url` (native.ts and serve.ts find their files beside their
 * module; yargs its own) becomes the chunk file's URL; `url` is loaded by Node's bootstrap, so
 * this costs nothing. Imports of other chunks name them with `.cjs`.
 */
async function toCommonJs(name, text) {
  const { code } = await transform(text, {
    ...common,
    format: 'cjs',
    // import() becomes a require() in a promise: chunks load through the CommonJS loader.
    supported: { 'dynamic-import': false },
    define: { 'import.meta.url': '__fsplModuleUrl' },
    sourcefile: name,
  });
  const renamed = code
    .replace(/require\("(\.\/[^"]+)\.js"\)/g, 'require("$1.cjs")')
    // A default import of a node: module (`import fs from 'node:fs'`) is a namespace object that
    // esbuild's __toESM fills with a getter per export, a hundred for node:fs, in every chunk that
    // imports it: about a millisecond of every start. An object that inherits from the module
    // reads the same (`.default`, and any export), with nothing copied.
    .replace(/__toESM\(require\("(node:[\w/]+)"\)\)/g, '__fsplBuiltin(require("$1"))');
  const helpers = [
    /\b__fsplModuleUrl\b/.test(renamed) && 'const __fsplModuleUrl=require("url").pathToFileURL(__filename).href;',
    /\b__fsplBuiltin\b/.test(renamed) && 'const __fsplBuiltin=(m)=>Object.create(m,{default:{value:m,enumerable:true}});',
  ];
  return `"use strict";\n${helpers.filter(Boolean).join('\n')}\n${renamed}`;
}

export async function bundle() {
  const chunks = await esmChunks();
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  for (const [name, text] of chunks) {
    if (!name.endsWith('.js')) throw new Error(`unexpected bundle output ${name}`);
    fs.writeFileSync(path.join(OUT, name.replace(/\.js$/, '.cjs')), await toCommonJs(name, text));
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  bundle().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
