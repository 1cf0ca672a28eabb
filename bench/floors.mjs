// Floors: what Node itself costs for the work a queue run does, measured without fspl.
//   node bench/floors.mjs spawn N         N sequential child_process.spawn of /bin/true
//   node bench/floors.mjs native-spawn N  the same through the native addon's posix_spawn
//                                         (prints "none" when the addon is not built)
//   node bench/floors.mjs nop DIR         the syscalls of a NOP run over the queue DIR
// Prints the elapsed milliseconds of the loop (start-up excluded).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [what, arg] = process.argv.slice(2);
const t0 = performance.now();
if (what === 'spawn') {
  for (let i = 0; i < Number(arg); i++) {
    await new Promise((resolve, reject) => {
      const c = spawn('/bin/true', [], { stdio: 'inherit' });
      c.on('close', resolve);
      c.on('error', reject);
    });
  }
} else if (what === 'native-spawn') {
  const addon = new URL('../native/build/Release/fspl_native.node', import.meta.url);
  if (!fs.existsSync(addon)) {
    process.stdout.write('none\n');
    process.exit(0);
  }
  const b = createRequire(import.meta.url)(addon.pathname);
  const env = Object.entries(process.env).map(([k, v]) => `${k}=${v}\0`).join('');
  const start = performance.now();
  for (let i = 0; i < Number(arg); i++) {
    await new Promise((resolve, reject) => {
      if (b.spawn('/bin/true', 'true\0', env, 0, 1, 2, resolve) < 0) reject(new Error('spawn failed'));
    });
  }
  process.stdout.write(`${(performance.now() - start).toFixed(1)}\n`);
  process.exit(0);
} else if (what === 'nop') {
  // One scan (open, one read, close per file), then per job: seqfile temp, write, fsync, close,
  // rename, unlink: the same system calls as a queue run of NOP jobs, with no decoding at all.
  const jobs = path.join(arg, 'jobs');
  const buf = Buffer.alloc(4096);
  const names = fs.readdirSync(jobs);
  for (const n of names) {
    const fd = fs.openSync(path.join(jobs, n), 'r');
    fs.readSync(fd, buf, 0, 4096, 0);
    fs.closeSync(fd);
  }
  const seq = path.join(arg, 'nextseq');
  names.forEach((n, i) => {
    const fd = fs.openSync(`${seq}.temp`, 'w');
    fs.writeSync(fd, `${i + 2}\n`);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(`${seq}.temp`, seq);
    fs.unlinkSync(path.join(jobs, n));
  });
} else {
  throw new Error('usage: floors.mjs spawn N | native-spawn N | nop DIR');
}
process.stdout.write(`${(performance.now() - t0).toFixed(1)}\n`);
