/**
 * Shared machinery for the reliability suite (test/reliability): seeded randomness, a private
 * copy of the built CLI, process helpers (spawn, kill -9 a whole process group), queue builders,
 * gating of the parts that need root, and the figures each test records.
 *
 * Figures go to test/reliability/.results/NAME.json (gitignored); docs/reliability.md is written
 * from them (`node test/reliability/summarize.mjs` prints them as a table).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, expect } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import type { CommandType, PacketHeader } from '../../src/packet/types.js';
import { copyBuild } from '../build-copy.js';
import { describeIfPresent } from '../gate.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RESULTS_DIR = path.join(ROOT, 'test', 'reliability', '.results');
export const REF_BIN = process.env.FSPL_REFERENCE_BIN || '/usr/bin/fspl';
export const HAVE_REF = fs.existsSync(REF_BIN);
export const IS_ROOT = process.getuid?.() === 0;
/** The PATH every CLI run gets; nothing else is inherited from the test runner. */
export const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ------------------------------------------------------------------------------------------------
// Seeded randomness: RELIABILITY_SEED=N replays a run (each test logs the seed it used).

export interface Rng {
  seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number;
  shuffle<T>(items: T[]): T[];
}

function mulberry32(a: number): () => number {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed for a named test: RELIABILITY_SEED if set, else a fresh random one; logged either way. */
export function seedFor(name: string): number {
  const fromEnv = process.env.RELIABILITY_SEED;
  const seed = fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) >>> 0 : randomInt(0, 2 ** 31);
  console.log(`[reliability] ${name}: seed ${seed} (replay with RELIABILITY_SEED=${seed})`);
  return seed;
}

export function rngFor(name: string): Rng {
  const seed = seedFor(name);
  const next = mulberry32(seed);
  return {
    seed,
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    shuffle<T>(items: T[]): T[] {
      const a = [...items];
      for (let i = a.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [a[i], a[j]] = [a[j]!, a[i]!];
      }
      return a;
    },
  };
}

// ------------------------------------------------------------------------------------------------
// Figures

/** Write a test's figures to .results/NAME.json (with the date, machine and Node version). */
export function record(name: string, seed: number | undefined, figures: Record<string, unknown>): void {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const out = {
    test: name,
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    root: IS_ROOT,
    seed,
    figures,
  };
  fs.writeFileSync(
    path.join(RESULTS_DIR, `${name}.json`),
    `${JSON.stringify(out, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`,
  );
  console.log(
    `[reliability] ${name}: ${JSON.stringify(figures, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}`,
  );
}

// ------------------------------------------------------------------------------------------------
// Gating: parts that need root (mounts, running as another user) or the reference.

export interface Needs {
  root?: boolean;
  /** mount(8) of a tmpfs must work (root with CAP_SYS_ADMIN). */
  mount?: boolean;
  reference?: boolean;
}

let mountWorks: boolean | undefined;
function canMount(): boolean {
  if (mountWorks !== undefined) return mountWorks;
  if (!IS_ROOT) return (mountWorks = false);
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-rel-probe-'));
  try {
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', d]);
    mountWorks = r.status === 0;
    if (mountWorks) spawnSync('umount', [d]);
  } finally {
    fs.rmSync(d, { recursive: true, force: true });
  }
  return mountWorks;
}

function lacking(needs: Needs): string[] {
  const out: string[] = [];
  if (needs.root && !IS_ROOT) out.push('root (the suite runs as root in CI)');
  if (needs.mount && !canMount()) out.push('permission to mount a tmpfs (root with CAP_SYS_ADMIN)');
  if (needs.reference && !HAVE_REF) out.push(`the reference fspl (${REF_BIN}; apt-get install filespooler)`);
  return out;
}

/**
 * describe() for a part with prerequisites. When one is missing: in CI a failing test names it;
 * elsewhere the part is skipped with a visible warning.
 */
export function describeNeeding(name: string, needs: Needs, fn: () => void): void {
  describeIfPresent(name, lacking(needs), { what: 'reliability tests' }, fn);
}

// ------------------------------------------------------------------------------------------------
// Temporary directories (world-readable, so that a CLI run as nobody can reach them)

const temps: string[] = [];

export function tempDir(prefix = 'fspl-rel-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(d, 0o755);
  temps.push(d);
  return d;
}

afterEach(() => {
  for (const d of temps.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

// ------------------------------------------------------------------------------------------------
// A private copy of the built CLI and library.
//
// `npm run build` starts with `rm -rf dist`, so a rebuild during a run would make every CLI call
// fail for a while. Each test file copies bin/, dist/ and the native addon if built, once, into a
// temporary directory that nobody (the permission cases run as nobody) can reach even when the
// checkout can't be (test/build-copy.ts), and runs that copy. RELIABILITY_BUILD=DIR copies
// another checkout's build instead.

let buildDir: string | undefined;

/** The directory holding this file's copy of bin/ and dist/. */
export function build(): string {
  return (buildDir ??= copyBuild(process.env.RELIABILITY_BUILD || ROOT));
}

/** Our CLI (the copy). */
export function fsplBin(): string {
  return path.join(build(), 'bin', 'fspl');
}

/** The library entry point of the copy, for child processes. */
export function libraryPath(): string {
  return path.join(build(), 'dist', 'index.js');
}

afterAll(() => {
  if (buildDir) fs.rmSync(buildDir, { recursive: true, force: true });
  buildDir = undefined;
});

// ------------------------------------------------------------------------------------------------
// Running processes

export interface RunOptions {
  cwd?: string;
  /** Variables added to the controlled environment (PATH, TZ=UTC). */
  env?: Record<string, string>;
  /**
   * Standard input: bytes through a pipe, a file opened as fd 0, /dev/null ('null'), or a pipe
   * left open for the caller to write ('pipe'). Default: an empty pipe.
   */
  stdin?: Buffer | { file: string } | 'null' | 'pipe';
  /** Run the CLI as this user (root only), e.g. 65534 (nobody). */
  uid?: number;
  /** Kill the whole process group after this long; the result then has timedOut set. */
  timeoutMs?: number;
  /** Which implementation: ours (default) or the reference. */
  impl?: 'ours' | 'ref';
  /** Leave the process group alone when fspl exits (by default what is left in it is killed). */
  keepGroup?: boolean;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
  timedOut: boolean;
}

export function envFor(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: BASE_PATH, TZ: 'UTC', ...extra };
}

function argvFor(args: string[], opts: RunOptions): [string, string[]] {
  let file: string;
  let argv: string[];
  if (opts.impl === 'ref') [file, argv] = [REF_BIN, args];
  else [file, argv] = [process.execPath, [fsplBin(), ...args]];
  if (opts.uid !== undefined) {
    return ['setpriv', [`--reuid=${opts.uid}`, `--regid=${opts.uid}`, '--clear-groups', '--', file, ...argv]];
  }
  return [file, argv];
}

/**
 * Start fspl in its own process group (so that the group, commands included, can be killed as
 * one, as a crash or a power cut would). stdout and stderr are collected.
 */
export function startFspl(args: string[], opts: RunOptions = {}): { child: ChildProcess; done: Promise<RunResult> } {
  const [file, argv] = argvFor(args, opts);
  let stdinFd: number | undefined;
  let stdio0: 'pipe' | 'ignore' | number = 'pipe';
  if (opts.stdin === 'null') stdio0 = 'ignore';
  else if (opts.stdin !== undefined && opts.stdin !== 'pipe' && !Buffer.isBuffer(opts.stdin))
    stdio0 = stdinFd = fs.openSync(opts.stdin.file, 'r');
  const child = spawn(file, argv, {
    cwd: opts.cwd,
    env: envFor(opts.env),
    stdio: [stdio0, 'pipe', 'pipe'],
    detached: true,
  });
  if (stdinFd !== undefined) fs.closeSync(stdinFd);
  if (child.stdin) {
    child.stdin.on('error', () => {}); // EPIPE when the child is killed or does not read
    if (opts.stdin !== 'pipe') child.stdin.end(Buffer.isBuffer(opts.stdin) ? opts.stdin : undefined);
  }
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout!.on('data', (c: Buffer) => out.push(c));
  child.stderr!.on('data', (c: Buffer) => err.push(c));
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  if (opts.timeoutMs !== undefined) {
    timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, opts.timeoutMs);
  }
  const done = new Promise<RunResult>((resolve, reject) => {
    child.once('error', reject);
    // Whatever the run leaves in its group (a hung decoder, say) goes with it; such a straggler
    // would otherwise keep the output pipes, and so the run, open.
    if (!opts.keepGroup) child.once('exit', () => killGroup(child));
    child.once('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8'), timedOut });
    });
  });
  return { child, done };
}

/** Run fspl to completion (30 s safety net unless told otherwise). */
export function fspl(args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return startFspl(args, { timeoutMs: 30_000, ...opts }).done;
}

/** SIGKILL a child's whole process group (it was started detached, so it leads one). */
export function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** Whether any process is left in a process group. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The lines of a stderr that are not empty. */
export function lines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

/** Exit 1 and exactly one `Error: ` line (besides fspl's own log lines, such as the failed command's). */
export function expectOneErrorLine(r: RunResult, pattern: RegExp, what: string): void {
  expect(r.code, `${what}: ${r.stderr}`).toBe(1);
  expect(
    lines(r.stderr).filter((l) => !/^ *(ERROR|WARN) fspl::/.test(l)),
    what,
  ).toEqual([expect.stringMatching(pattern)]);
}

/** Wait until fn() holds, polling; throws after timeoutMs. */
export async function waitFor(fn: () => boolean, what: string, timeoutMs = 20_000, everyMs = 5): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ------------------------------------------------------------------------------------------------
// Packets and queues

export const CTIME = { secs: 1_700_000_000n, nanos: 0 };

export function header(
  seq: bigint | number,
  cmd: CommandType = { kind: 'Command', params: [], env: [] },
): PacketHeader {
  return { seq: BigInt(seq), ctime: { secs: CTIME.secs + BigInt(seq), nanos: 0 }, cmd };
}

/** A command packet: header plus payload. */
export function packet(seq: bigint | number, payload: Uint8Array | string = `payload ${seq}\n`): Buffer {
  return Buffer.concat([encodeHeader(header(seq)), Buffer.from(payload)]);
}

/**
 * A command that records its job: appends FSPL_SEQ to LOG (one O_APPEND write, so lines never
 * interleave), then reads its whole payload. Returns the script's path.
 */
export function recorder(dir: string, log: string, extra = ''): string {
  const p = path.join(dir, 'record.sh');
  fs.writeFileSync(p, `#!/bin/sh\necho "$FSPL_SEQ" >> '${log}'\n${extra}cat > /dev/null\n`, { mode: 0o755 });
  return p;
}

/** The sequence numbers recorded so far. */
export function readLog(log: string): number[] {
  if (!fs.existsSync(log)) return [];
  return lines(fs.readFileSync(log, 'utf8')).map(Number);
}

/** Entries of a directory, sorted. */
export function ls(dir: string): string[] {
  return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
}

export const isJobName = (n: string) => n.startsWith('fspl-') && n.endsWith('.fspl');
export const isTempName = (n: string) => n.startsWith('tmp-fspl-') || n.endsWith('.tmp') || n.endsWith('.temp');
