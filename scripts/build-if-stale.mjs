// The quick build of the test scripts: runs `npm run build` only when dist/ is missing or older
// than an input. `npm run build` calls this with --begin (before tsc) and --end (after the last
// step); the stamp's time is the build's start, so an edit made during a build makes it stale.
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const started = path.join(root, 'dist', '.build-started');
const stamp = path.join(root, 'dist', '.build-stamp');
const INPUTS = ['src', 'native', 'scripts', 'bin', 'package.json', 'package-lock.json', 'tsconfig.json'];

/** The newest mtime under p (directories count: a file removed changes its folder's). */
function newest(p) {
  if (p === path.join(root, 'native', 'build')) return 0; // the addon's output
  let st;
  try {
    st = fs.statSync(p);
  } catch {
    return 0;
  }
  let t = st.mtimeMs;
  if (st.isDirectory()) {
    for (const e of fs.readdirSync(p)) t = Math.max(t, newest(path.join(p, e)));
  }
  return t;
}

const arg = process.argv[2];
if (arg === '--begin') {
  fs.mkdirSync(path.dirname(started), { recursive: true });
  fs.writeFileSync(started, '');
} else if (arg === '--end') {
  fs.renameSync(started, stamp);
} else {
  let built = 0;
  try {
    built = fs.statSync(stamp).mtimeMs;
  } catch {}
  const input = Math.max(...INPUTS.map((i) => newest(path.join(root, i))));
  if (built === 0 || input >= built) execSync('npm run build', { cwd: root, stdio: 'inherit' });
  else console.log('dist/ is current: no build');
}
