#!/usr/bin/env node
// Build the optional native addon (fspl_native.c) with node-gyp: part of `npm run build`, and the
// package's install script. It never fails the build: without a compiler, Node headers or
// node-gyp, fspl works the same through pure-Node code, only slower on the per-job paths (see
// src/sys/native.ts). Linux only (clone, close_range, pidfd and friends).
//
//   FSPL_NO_NATIVE_BUILD=1   skip the build (and remove a previously built addon)
//   FSPL_NATIVE_VERBOSE=1    show node-gyp's output even when it succeeds
//
// Offline-safe where possible: node-gyp is given the headers of the running Node
// (npm's nodedir setting, or PREFIX/include/node next to the node binary, which official Node
// tarballs and distribution packages ship), so it does not download them.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ADDON = path.join(HERE, 'build', 'Release', 'fspl_native.node');
const verbose = process.env.FSPL_NATIVE_VERBOSE === '1';
const say = (msg) => process.stderr.write(`fspl native addon: ${msg}\n`);

function skip(why) {
  fs.rmSync(ADDON, { force: true });
  say(`${why}; fspl will use its pure-Node code (slower to start jobs and to scan queues).`);
  process.exit(0);
}

if (process.env.FSPL_NO_NATIVE_BUILD === '1') skip('not built (FSPL_NO_NATIVE_BUILD=1)');
if (process.platform !== 'linux') skip(`not built on ${process.platform} (Linux only)`);

function findNodeGyp() {
  const candidates = [];
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  if (process.env.npm_execpath)
    candidates.push(
      path.join(path.dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    );
  // npm's own copy, next to the node binary: PREFIX/bin/node -> PREFIX/lib/node_modules/npm.
  candidates.push(
    path.join(
      path.dirname(process.execPath),
      '..',
      'lib',
      'node_modules',
      'npm',
      'node_modules',
      'node-gyp',
      'bin',
      'node-gyp.js',
    ),
  );
  candidates.push(path.join(HERE, '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  for (const c of candidates) if (c && fs.existsSync(c)) return [process.execPath, c];
  const onPath = spawnSync('sh', ['-c', 'command -v node-gyp'], { encoding: 'utf8' });
  if (onPath.status === 0 && onPath.stdout.trim()) return [onPath.stdout.trim()];
  return undefined;
}

function nodeDir() {
  if (process.env.npm_config_nodedir) return process.env.npm_config_nodedir;
  const prefix = path.join(path.dirname(process.execPath), '..');
  if (fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) return path.resolve(prefix);
  return undefined; // node-gyp downloads the headers (needs the network)
}

const gyp = findNodeGyp();
if (!gyp) skip('not built: node-gyp not found (it comes with npm)');
const dir = nodeDir();

function run(cmd) {
  const argv = [...gyp.slice(1), cmd, ...(dir ? [`--nodedir=${dir}`] : [])];
  const r = spawnSync(gyp[0], argv, { cwd: HERE, encoding: 'utf8', stdio: verbose ? 'inherit' : 'pipe' });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}` };
}

// Incremental when configured already (make rebuilds only what changed); a full rebuild otherwise
// or when the incremental build fails (a stale configuration, another Node).
let r = fs.existsSync(path.join(HERE, 'build', 'Makefile')) ? run('build') : { ok: false, output: '' };
if (!r.ok) r = run('rebuild');
if (!r.ok) {
  const tail = r.output
    .split('\n')
    .filter((l) => l && !l.startsWith('gyp info'))
    .slice(-15)
    .join('\n');
  if (tail) process.stderr.write(`${tail}\n`);
  skip('build failed (a C compiler, make and python3 are needed)');
}
try {
  const b = createRequire(import.meta.url)(ADDON);
  if (b.version !== 1) throw new Error(`unexpected version ${b.version}`);
} catch (err) {
  skip(`built but cannot be loaded (${err.message})`);
}
if (verbose) say(`built ${path.relative(process.cwd(), ADDON) || ADDON}`);
