/**
 * A private copy of the built CLI and library, for tests that run bin/fspl as another user or
 * must not be disturbed by a rebuild (`npm run build` starts with `rm -rf dist`).
 *
 * The copy lives in a directory of its own under the temp dir, mode 0755, so that another user
 * (nobody, or a user made by the test) can run it even when the checkout itself is out of that
 * user's reach: a clone in /root, mode 0700, is a common way to try the project as root. It holds
 * bin/, dist/, package.json, the native addon if built, and node_modules/ with a real copy of
 * each package the CLI bundle leaves out (EXTERNAL in scripts/bundle.mjs) and a symlink to the
 * checkout's copy of every other one (for the library in dist/, loaded by the tests' own user).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXTERNAL } from '../scripts/bundle.mjs';
import { ROOT } from './helpers.js';

const NEEDED = ['bin/fspl', 'dist/bundle/group-start.cjs', 'dist/index.js'];
const ADDON = path.join('native', 'build', 'Release', 'fspl_native.node');

/** Copy the build of `from` (default: this checkout); remove the directory returned when done. */
export function copyBuild(from = ROOT): string {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const dest = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-build-'));
    try {
      fs.chmodSync(dest, 0o755);
      if (!NEEDED.every((f) => fs.existsSync(path.join(from, f))))
        throw new Error(`no build in ${from} (run npm run build)`);
      for (const d of ['bin', 'dist']) fs.cpSync(path.join(from, d), path.join(dest, d), { recursive: true });
      fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dest, 'package.json'));
      // The optional native addon, found relative to dist/: the CLI must be tested as it ships.
      if (fs.existsSync(path.join(from, ADDON))) {
        fs.mkdirSync(path.dirname(path.join(dest, ADDON)), { recursive: true });
        fs.copyFileSync(path.join(from, ADDON), path.join(dest, ADDON));
      }
      const modules = path.join(dest, 'node_modules');
      fs.mkdirSync(modules);
      for (const name of fs.readdirSync(path.join(ROOT, 'node_modules'))) {
        if (name.startsWith('.')) continue;
        const source = path.join(ROOT, 'node_modules', name);
        if (EXTERNAL.some((e) => e === name || e.startsWith(`${name}/`)))
          fs.cpSync(source, path.join(modules, name), { recursive: true, dereference: true });
        else fs.symlinkSync(source, path.join(modules, name));
      }
      if (!NEEDED.every((f) => fs.existsSync(path.join(dest, f))))
        throw new Error('the build changed while it was copied');
      return dest;
    } catch (err) {
      fs.rmSync(dest, { recursive: true, force: true });
      if (Date.now() > deadline) throw err;
      spawnSync('sleep', ['2']); // a rebuild is probably under way
    }
  }
}
