/**
 * Shared machinery for the differential compatibility suite: every case is run against our CLI
 * (`node bin/fspl`) and against the reference Filespooler 1.2.2 (`/usr/bin/fspl`), and the two
 * results are compared.
 *
 * - Every process gets a controlled environment (like `env -i PATH=... TZ=...`): nothing from the
 *   test runner leaks in, so FSPL_SET_ variables and the child environment are deterministic.
 * - Packets are made under a frozen clock (libfaketime, whole seconds), so both implementations
 *   write the same bytes.
 * - Queues are built once and copied (`cp -a`) for each implementation, so job file names (random
 *   UUIDs) are identical on both sides.
 */

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { execa, type Options, type ResultPromise } from 'execa';
import { expect, onTestFinished } from 'vitest';
import { describeIfPresent } from '../gate.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const OURS_BIN = path.join(REPO_ROOT, 'bin', 'fspl');
export const REF_BIN = process.env.FSPL_REFERENCE_BIN || '/usr/bin/fspl';
export const FAKETIME_LIB = process.env.FSPL_FAKETIME_LIB || '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
/** Golden packets written by the reference, kept in the repository (see test/fixtures/vectors/README.md). */
export const VECTORS_DIR = process.env.FSPL_VECTORS_DIR || path.join(REPO_ROOT, 'test', 'fixtures', 'vectors');

export const HAVE_REF = fs.existsSync(REF_BIN);
export const HAVE_FAKETIME = fs.existsSync(FAKETIME_LIB);
export const HAVE_VECTORS = fs.existsSync(path.join(VECTORS_DIR, 'nop.fspl'));

/** The PATH every process gets; nothing else is inherited. */
export const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** The default frozen clock. */
export const T0 = '2030-01-02 03:04:05';
export const U64_MAX = '18446744073709551615';

export type Impl = 'ref' | 'ours';
export const IMPLS: readonly Impl[] = ['ref', 'ours'];
export const other = (impl: Impl): Impl => (impl === 'ref' ? 'ours' : 'ref');

/** The sequence numbers `queue-ls` lists (its first column, under the heading line), in its order. */
export function listedSeqs(stdout: string | Uint8Array): string[] {
  return stdout
    .toString()
    .split('\n')
    .slice(1)
    .filter((l) => l.trim() !== '')
    .map((l) => l.split(/ +/)[0]!);
}

// ------------------------------------------------------------------------------------------------
// Suite gating: without the reference (or libfaketime, or the vectors) the comparisons can't run.
// In CI that is a failure; elsewhere the suite is skipped with a loud warning.

function missing(needs: { vectors?: boolean }): string[] {
  const out: string[] = [];
  if (!HAVE_REF) out.push(`the reference fspl (${REF_BIN}; apt-get install filespooler)`);
  if (!HAVE_FAKETIME) out.push(`libfaketime (${FAKETIME_LIB}; apt-get install faketime)`);
  if (needs.vectors && !HAVE_VECTORS) out.push(`the golden vectors (${VECTORS_DIR})`);
  return out;
}

/**
 * describe() for a compat suite. When a requirement is missing: in CI (CI=true) a failing test
 * says what is missing; otherwise the suite is skipped with a console warning.
 */
export function describeCompat(name: string, fn: () => void, needs: { vectors?: boolean } = {}): void {
  describeIfPresent(
    name,
    missing(needs),
    { what: 'compat suite', note: 'Nothing was compared against Filespooler 1.2.2.' },
    fn,
  );
}

// ------------------------------------------------------------------------------------------------
// Temporary directories

/** A fresh temporary directory, removed when the current test finishes. */
export function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-compat-'));
  onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A temporary directory for a beforeAll hook; the caller removes it (afterAll). */
export function tmpDirForSuite(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-compat-'));
}

// ------------------------------------------------------------------------------------------------
// Running the CLIs

export interface RunOptions {
  cwd?: string;
  /** Extra variables, added after PATH and TZ, in this order. */
  env?: Record<string, string>;
  /** Replace the whole environment (PATH is not added). */
  rawEnv?: Record<string, string>;
  /** Standard input: bytes (a pipe), or a file opened as fd 0. Default: an empty pipe. */
  stdin?: Buffer | string | { file: string };
  /** Freeze the clock at this time (libfaketime syntax, e.g. "2030-01-02 03:04:05"). */
  frozen?: string;
  /** TZ; default UTC. */
  tz?: string;
  /** Kill the process after this long (a safety net against hangs; the test then fails). */
  timeoutMs?: number;
  /** Start the process in its own process group (so the whole group can be killed). */
  detached?: boolean;
}

export interface RunResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

export function envFor(opts: RunOptions): Record<string, string> {
  if (opts.rawEnv) return { ...opts.rawEnv };
  const env: Record<string, string> = { PATH: BASE_PATH, TZ: opts.tz ?? 'UTC' };
  if (opts.frozen !== undefined) {
    env.LD_PRELOAD = FAKETIME_LIB;
    env.FAKETIME = opts.frozen;
    // Keep monotonic clocks real: event-loop timers must still run.
    env.FAKETIME_DONT_FAKE_MONOTONIC = '1';
  }
  return { ...env, ...(opts.env ?? {}) };
}

function command(impl: Impl, args: string[]): [string, string[]] {
  return impl === 'ref' ? [REF_BIN, args] : [process.execPath, [OURS_BIN, ...args]];
}

/** Start an implementation without waiting for it. */
export function spawnFspl(impl: Impl, args: string[], opts: RunOptions = {}): ResultPromise<{ encoding: 'buffer' }> {
  const [file, argv] = command(impl, args);
  const stdin = opts.stdin ?? Buffer.alloc(0);
  // A file is handed over as a real descriptor (as `< file` would), not streamed through a pipe.
  const fd = typeof stdin === 'object' && !Buffer.isBuffer(stdin) ? fs.openSync(stdin.file, 'r') : undefined;
  const stdinOption = fd !== undefined ? { stdin: fd } : { input: Buffer.from(stdin as Buffer | string) };
  const child = execa(file, argv, {
    cwd: opts.cwd,
    env: envFor(opts),
    extendEnv: false,
    reject: false,
    encoding: 'buffer',
    stripFinalNewline: false,
    maxBuffer: 256 * 1024 * 1024,
    timeout: opts.timeoutMs ?? 30_000,
    killSignal: 'SIGKILL',
    detached: opts.detached ?? false,
    ...stdinOption,
  } as Options) as unknown as ResultPromise<{ encoding: 'buffer' }>;
  if (fd !== undefined) {
    const close = () => fs.closeSync(fd);
    child.then(close, close);
  }
  return child;
}

export function toResult(
  r: { exitCode?: number; signal?: string; timedOut?: boolean; stdout: unknown; stderr: unknown },
  what: string,
): RunResult {
  if (r.timedOut) throw new Error(`${what}: timed out (killed)`);
  return {
    code: r.exitCode ?? (r.signal ? 128 + (os.constants.signals[r.signal as NodeJS.Signals] ?? 0) : -1),
    stdout: Buffer.from(r.stdout as Uint8Array),
    stderr: Buffer.from(r.stderr as Uint8Array).toString('utf8'),
  };
}

/** Run one implementation to completion. */
export async function fspl(impl: Impl, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const r = await spawnFspl(impl, args, opts);
  return toResult(r, `${impl} fspl ${args.join(' ')}`);
}

/** Run both implementations with the same arguments and options (in parallel). */
export async function both(
  args: string[],
  opts: RunOptions | ((impl: Impl) => RunOptions) = {},
): Promise<Record<Impl, RunResult>> {
  const o = (impl: Impl) => (typeof opts === 'function' ? opts(impl) : opts);
  const [ref, ours] = await Promise.all([fspl('ref', args, o('ref')), fspl('ours', args, o('ours'))]);
  return { ref, ours };
}

// ------------------------------------------------------------------------------------------------
// Comparing

/** Bytes as a readable hex dump (32 bytes a line) so that a mismatch shows where. */
export function hex(buf: Buffer): string {
  const lines: string[] = [];
  for (let i = 0; i < buf.length; i += 32)
    lines.push(`${i.toString(16).padStart(6, '0')}: ${buf.subarray(i, i + 32).toString('hex')}`);
  return lines.join('\n');
}

/** Assert two byte strings are equal, with a hex diff (or a digest for big ones). */
export function expectBytes(actual: Buffer, expected: Buffer, what: string): void {
  if (actual.equals(expected)) return;
  if (actual.length + expected.length > 64 * 1024) {
    expect(`${actual.length} bytes, sha256 ${sha256(actual)}`, what).toBe(
      `${expected.length} bytes, sha256 ${sha256(expected)}`,
    );
  }
  if (isText(actual) && isText(expected)) expect(actual.toString('utf8'), what).toBe(expected.toString('utf8'));
  expect(hex(actual), what).toBe(hex(expected));
}

/** UTF-8 without NUL bytes: shown as text in a diff. */
function isText(buf: Buffer): boolean {
  return !buf.includes(0) && Buffer.from(buf.toString('utf8'), 'utf8').equals(buf);
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Our stdout and status must equal the reference's. */
export function expectSameOutput(r: Record<Impl, RunResult>, what: string): void {
  expect(r.ours.code, `${what}: exit status (ours vs reference); ours stderr: ${r.ours.stderr}`).toBe(r.ref.code);
  expectBytes(r.ours.stdout, r.ref.stdout, `${what}: stdout (ours vs reference)`);
}

/** The lines of a stderr that are not empty. */
export function stderrLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l !== '');
}

/**
 * A runtime error: exit 1, nothing on stdout. The reference's message starts with `Error: `
 * (anyhow may add a "Caused by" block); ours must be exactly one `Error: ` line.
 */
export function expectRuntimeError(
  r: Record<Impl, RunResult>,
  what: string,
  opts: { stdoutMayDiffer?: boolean } = {},
): void {
  expect(r.ref.code, `${what}: reference exit status (stderr: ${r.ref.stderr})`).toBe(1);
  expect(r.ref.stderr.startsWith('Error: '), `${what}: reference stderr: ${r.ref.stderr}`).toBe(true);
  expect(r.ours.code, `${what}: our exit status; stderr: ${r.ours.stderr}`).toBe(1);
  expect(stderrLines(r.ours.stderr), `${what}: our stderr must be one "Error: " line`).toEqual([
    expect.stringMatching(/^Error: /),
  ]);
  if (!opts.stdoutMayDiffer) expectBytes(r.ours.stdout, r.ref.stdout, `${what}: stdout`);
}

/** A usage error: both exit 2 (the wording differs on purpose). */
export function expectUsageError(r: Record<Impl, RunResult>, what: string): void {
  expect(r.ref.code, `${what}: reference exit status (stderr: ${r.ref.stderr})`).toBe(2);
  expect(r.ours.code, `${what}: our exit status; stderr: ${r.ours.stderr}; stdout: ${r.ours.stdout}`).toBe(2);
}

// ------------------------------------------------------------------------------------------------
// File system snapshots

/**
 * Every entry under dir, sorted: directories, and regular files with mode, size and content
 * (text for small files, a digest for job files and big ones). Used to compare end states.
 */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const abs = path.join(dir, rel);
    for (const name of fs.readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = fs.lstatSync(path.join(dir, r));
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isDirectory()) {
        out[`${r}/`] = `dir ${mode}`;
        walk(r);
      } else if (st.isFile()) {
        const data = fs.readFileSync(path.join(dir, r));
        const text =
          !name.endsWith('.fspl') && data.length <= 4096 && !data.includes(0)
            ? JSON.stringify(data.toString('latin1'))
            : `sha256 ${sha256(data)}`;
        out[r] = `file ${mode} ${data.length} ${text}`;
      } else {
        out[r] = `other ${mode}`;
      }
    }
  };
  walk('');
  return out;
}

export function readIf(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'latin1');
  } catch {
    return undefined;
  }
}

/** Copy a directory tree the way `cp -a` does (same creation order for every copy). */
export async function copyTree(from: string, to: string): Promise<void> {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  const r = await execa('cp', ['-a', from, to], { reject: false });
  if (r.exitCode !== 0) throw new Error(`cp -a ${from} ${to}: ${r.stderr}`);
}

// ------------------------------------------------------------------------------------------------
// The executor: a small shell script that records what it was given.

/**
 * Appends to ./log (in its cwd): argv, its exact initial environment (from /proc, in the order
 * fspl passed it), and the sha256 of its stdin. Prints `out:SEQ` on stdout and `err:SEQ` on
 * stderr. Per-job behaviour is steered by variables stored in the job:
 *   FSPL_SET_EXIT=N     exit with N
 *   FSPL_SET_SLEEP=N    then become `sleep N` (so --timeout kills the sleeping process itself)
 *   FSPL_SET_HOLD=1     touch ./started, then wait until ./release exists (max 30 s)
 */
export const EXECUTOR = `#!/bin/sh
{
  printf '=== job\\n'
  printf 'argc=%s\\n' "$#"
  for a in "$@"; do printf 'arg=<%s>\\n' "$a"; done
  printf 'environ:\\n'
  tr '\\000' '\\n' < /proc/$$/environ
  printf 'stdin-sha256='
  sha256sum | cut -d' ' -f1
} >> log
echo "out:$FSPL_SEQ"
echo "err:$FSPL_SEQ" >&2
if [ -n "$FSPL_SET_HOLD" ]; then
  : > started
  i=0
  while [ ! -e release ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
fi
if [ -n "$FSPL_SET_SLEEP" ]; then exec sleep "$FSPL_SET_SLEEP" </dev/null >/dev/null 2>&1; fi
exit "\${FSPL_SET_EXIT:-0}"
`;

/** Write the executor into dir; returns its absolute path. */
export function writeExecutor(dir: string, name = 'exec.sh'): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, EXECUTOR, { mode: 0o755 });
  return p;
}

/** The lines of a stderr written by the executor (fspl's own log lines are left out). */
export function executorErrLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.startsWith('err:'));
}

// ------------------------------------------------------------------------------------------------
// Packets and queues

export interface JobSpec {
  seq: bigint | number | string;
  kind?: 'cmd' | 'nop' | 'fail';
  params?: string[];
  /** FSPL_SET_ variables, names without the prefix, in this order. */
  env?: Record<string, string>;
  payload?: Buffer | string;
  /** Frozen clock for the packet; default T0. */
  time?: string;
  /** Store the job gzip-compressed (read it back with -d zcat). */
  gzip?: boolean;
}

const packetCache = new Map<string, Promise<Buffer>>();

/** Make a packet with one implementation (under a frozen clock, in a scratch directory). */
export function makePacket(impl: Impl, spec: JobSpec): Promise<Buffer> {
  const key = JSON.stringify([
    impl,
    String(spec.seq),
    spec.kind,
    spec.params,
    spec.env,
    spec.payload?.toString(),
    spec.time,
  ]);
  let p = packetCache.get(key);
  if (!p) {
    p = (async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-compat-pkt-'));
      try {
        fs.writeFileSync(path.join(dir, 'sf'), `${spec.seq}\n`);
        const kind = spec.kind ?? 'cmd';
        const env: Record<string, string> = {};
        for (const [k, v] of Object.entries(spec.env ?? {})) env[`FSPL_SET_${k}`] = v;
        const args =
          kind === 'nop'
            ? ['prepare-nop', '-s', 'sf']
            : kind === 'fail'
              ? ['prepare-fail', '-s', 'sf']
              : [
                  'prepare',
                  '-s',
                  'sf',
                  ...(spec.payload !== undefined ? ['-i', '-'] : []),
                  '--',
                  ...(spec.params ?? []),
                ];
        const r = await fspl(impl, args, {
          cwd: dir,
          env,
          frozen: spec.time ?? T0,
          stdin: spec.payload !== undefined ? Buffer.from(spec.payload) : undefined,
        });
        if (r.code !== 0) throw new Error(`${impl} ${args.join(' ')} failed: ${r.stderr}`);
        return r.stdout;
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    })();
    packetCache.set(key, p);
  }
  return p;
}

/**
 * Build a queue with one implementation: queue-init, then for each job prepare (frozen clock)
 * and queue-write (through gzip for gzip jobs). nextseq is then set if asked.
 */
export async function buildQueue(
  impl: Impl,
  qdir: string,
  jobs: JobSpec[],
  opts: { nextseq?: bigint | number | string } = {},
): Promise<void> {
  const init = await fspl(impl, ['queue-init', '-q', qdir]);
  if (init.code !== 0) throw new Error(`${impl} queue-init failed: ${init.stderr}`);
  for (const job of jobs) {
    let packet = await makePacket(impl, job);
    if (job.gzip) packet = zlib.gzipSync(packet);
    const w = await fspl(impl, ['queue-write', '-q', qdir], { stdin: packet });
    if (w.code !== 0) throw new Error(`${impl} queue-write failed: ${w.stderr}`);
  }
  if (opts.nextseq !== undefined) fs.writeFileSync(path.join(qdir, 'nextseq'), `${opts.nextseq}\n`);
}

/** What a processing run left behind, for comparison between the implementations. */
export interface ProcessState {
  code: number;
  stdout: string;
  /** The executor's stderr lines (fspl's own log wording differs on purpose). */
  executorStderr: string[];
  /** The executor's log: argv, environment and stdin digest of each job run. */
  log: string;
  /** The queue directory afterwards. */
  queue: Record<string, string>;
}

/**
 * Copy a built queue for each implementation (cwd ROOT/IMPL, queue at ./q), run the same
 * fspl command in both, and return both end states. `args` may use the placeholder EXEC for
 * the executor's path.
 */
export async function runOnCopies(
  builtQueue: string,
  root: string,
  args: string[],
  opts: {
    stdin?: Buffer;
    executor?: string;
    env?: Record<string, string>;
    /** Set nextseq in each copy before running. */
    nextseq?: bigint | number | string;
    /** Called on each copy (the queue directory) before running. */
    setup?: (qdir: string) => void;
  } = {},
): Promise<Record<Impl, ProcessState & { stderr: string }>> {
  fs.mkdirSync(root, { recursive: true });
  const executor = opts.executor ?? writeExecutor(root);
  const out = {} as Record<Impl, ProcessState & { stderr: string }>;
  await Promise.all(
    IMPLS.map(async (impl) => {
      const cwd = path.join(root, impl);
      await copyTree(builtQueue, path.join(cwd, 'q'));
      if (opts.nextseq !== undefined) fs.writeFileSync(path.join(cwd, 'q', 'nextseq'), `${opts.nextseq}\n`);
      opts.setup?.(path.join(cwd, 'q'));
      const argv = args.map((a) => (a === 'EXEC' ? executor : a));
      const r = await fspl(impl, argv, { cwd, stdin: opts.stdin, env: opts.env });
      out[impl] = {
        code: r.code,
        stdout: r.stdout.toString('latin1'),
        executorStderr: executorErrLines(r.stderr),
        log: readIf(path.join(cwd, 'log')) ?? '',
        queue: snapshot(path.join(cwd, 'q')),
        stderr: r.stderr,
      };
    }),
  );
  return out;
}

/** Our end state must equal the reference's, field by field (for readable failures). */
export function expectSameState(s: Record<Impl, ProcessState & { stderr?: string }>, what: string): void {
  const ctx = `${what}\n--- reference stderr:\n${s.ref.stderr}\n--- our stderr:\n${s.ours.stderr}`;
  expect(s.ours.code, `${ctx}\nexit status`).toBe(s.ref.code);
  expect(s.ours.log, `${what}: executor log (argv, environment, stdin digest)`).toBe(s.ref.log);
  expect(s.ours.stdout, `${what}: stdout`).toBe(s.ref.stdout);
  expect(s.ours.executorStderr, `${what}: the executor's stderr lines`).toEqual(s.ref.executorStderr);
  expect(s.ours.queue, `${what}: queue directory afterwards`).toEqual(s.ref.queue);
}

/** Parse NAME=VALUE lines (values without newlines). */
export function infoMap(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

/** Wait until fn() is true (polling), or throw after timeoutMs. */
export async function waitFor(fn: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export function vector(name: string): string {
  return path.join(VECTORS_DIR, name);
}

export function listVectors(): string[] {
  return HAVE_VECTORS ? fs.readdirSync(VECTORS_DIR).sort() : [];
}

/** The entries of a directory in the order readdir(3) gives them (Node's readdirSync sorts them). */
export function readdirOrder(dir: string): string[] {
  const d = fs.opendirSync(dir);
  const out: string[] = [];
  try {
    for (let e = d.readSync(); e !== null; e = d.readSync()) out.push(e.name);
  } finally {
    d.closeSync();
  }
  return out;
}

/**
 * Rename some job files (to new fspl-*.fspl names, deterministically) until readdir lists them in an order
 * that is NOT their name order. The reference breaks ties (same ctime, same seq) in readdir
 * order; this makes a test tell that apart from name order. `select` picks the files by content.
 * Returns the selected names in readdir order.
 */
export function arrangeReaddirNotSorted(jobsDir: string, select: (content: Buffer) => boolean): string[] {
  for (let attempt = 0; attempt < 64; attempt++) {
    const order = readdirOrder(jobsDir).filter((n) => select(fs.readFileSync(path.join(jobsDir, n))));
    if (order.length < 2) throw new Error(`arrangeReaddirNotSorted: only ${order.length} files selected`);
    const sorted = [...order].sort();
    if (order.some((n, i) => n !== sorted[i])) return order;
    // A new name derived from the old one: the same steps on two identical copies give the same
    // names. The file renamed goes round the selection: renaming only the first got stuck in
    // name order for 46 or more attempts in about 1 directory in 300 on ext4 (0 in 300 this way).
    const victim = order[attempt % order.length]!;
    const renamed = `fspl-${sha256(`${victim}/${attempt}`)
      .slice(0, 32)
      .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-')}.fspl`;
    fs.renameSync(path.join(jobsDir, victim), path.join(jobsDir, renamed));
  }
  // Not seen since the renames go round (it was, in CI, when they did not): the test then can't tell
  // readdir order from name order, but both copies hold the same names in the same order, so
  // comparing the two implementations still holds. Say so rather than fail.
  const order = readdirOrder(jobsDir).filter((n) => select(fs.readFileSync(path.join(jobsDir, n))));
  console.warn(
    `arrangeReaddirNotSorted: readdir order in ${jobsDir} stayed the name ` +
      `order after 64 renames; ties are not told apart from name order here`,
  );
  return order;
}
