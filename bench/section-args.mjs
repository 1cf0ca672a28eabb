/**
 * The command line of a bench that prints a markdown section of docs/benchmarks.md (bench/net.mjs,
 * bench/many.mjs): --quick, --rounds N, --only A,B, --dir DIR, --ref PATH, --splice FILE, --help
 * (the script's header comment), and the options of its own (`extra`: name → how it sets opts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function parseSectionArgs(argv, scriptUrl, defaults = {}, extra = {}) {
  const o = {
    quick: process.env.BENCH_QUICK === '1',
    rounds: undefined,
    only: undefined,
    dir: undefined,
    ref: process.env.FSPL_REF ?? '/usr/bin/fspl',
    splice: undefined,
    ...defaults,
  };
  const name = path.basename(fileURLToPath(scriptUrl));
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => argv[++i];
    if (a === '--quick') o.quick = true;
    else if (a === '--rounds') o.rounds = Number(value());
    else if (a === '--only') o.only = new Set(value().split(','));
    else if (a === '--dir') o.dir = value();
    else if (a === '--ref') o.ref = value();
    else if (a === '--splice') o.splice = value();
    else if (extra[a]) extra[a](o, value());
    else if (a === '--help' || a === '-h') {
      process.stdout.write(fs.readFileSync(fileURLToPath(scriptUrl), 'utf8').split('*/')[0]);
      process.exit(0);
    } else {
      process.stderr.write(`bench/${name}: unknown option ${a}\n`);
      process.exit(2);
    }
  }
  o.rounds ??= o.quick ? 1 : 3;
  o.dir ??= fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  return o;
}
