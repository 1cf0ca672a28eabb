/** Helpers for the net tests: a net file in a temporary directory, tokens in and out. */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Net, type NetDefinition, readPacket } from 'filespooler';
import { afterEach } from 'vitest';
import { FSPL_BIN } from '../helpers.js';

const dirs: string[] = [];
const children = new Set<ChildProcess>();

/** Where net tests work: tmpfs when there is one (many small fsyncs), else the temp dir. */
const TMP_ROOT = process.env.FSPL_NET_TEST_TMP ?? (fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir());

export function netDir(): string {
  const d = fs.mkdtempSync(path.join(TMP_ROOT, 'fspl-net-test-'));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** Write a net file (and any scripts) into a fresh directory; returns the loaded, initialised net. */
export function makeNet(yaml: string, files: Record<string, string> = {}): { dir: string; file: string; net: Net } {
  const dir = netDir();
  for (const [name, text] of Object.entries(files)) {
    const p = path.join(dir, name);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text, { mode: 0o755 });
  }
  const file = path.join(dir, 'net.yaml');
  fs.writeFileSync(file, yaml);
  const net = Net.load(file);
  net.init();
  return { dir, file, net };
}

export interface Found {
  seq: bigint;
  /** NOP: a number filled by recovery (no key, no payload); Command: a token. */
  kind: 'Command' | 'NOP' | 'Fail';
  key: string;
  env: Record<string, string>;
  payload: string;
  filename: string;
}

/** The tokens in a place, by sequence number, with their payloads. */
export async function tokensIn(dir: string): Promise<Found[]> {
  const jobs = path.join(dir, 'jobs');
  const out: Found[] = [];
  for (const name of fs.readdirSync(jobs)) {
    if (!/^fspl-.*\.fspl$/.test(name)) continue;
    const p = await readPacket({ path: path.join(jobs, name) });
    const chunks: Buffer[] = [];
    for await (const c of p.payload) chunks.push(c as Buffer);
    const env = Object.fromEntries(p.env.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()]));
    out.push({
      seq: p.seq,
      kind: p.kind,
      key: env.KEY ?? '',
      env,
      payload: Buffer.concat(chunks).toString(),
      filename: name,
    });
  }
  return out.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
}

const KNOWN_FILE =
  /(^|\/)(fspl-[^/]*\.fspl|nextseq|nextseq\.lock|sendseq|sendseq\.lock|net\.yaml|journal|live\.json|run\.lock)$/;

/** Files in a directory tree other than job files, queue files and the state's own (temporaries, staging...). */
export function strayFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out.filter((f) => !KNOWN_FILE.test(f) && !f.includes('/logs/') && !f.endsWith('.sh'));
}

/** Start `fspl net ARGS` as a child process. */
export function spawnFspl(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  const c = spawn(process.execPath, [FSPL_BIN, ...args], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(c);
  c.on('exit', () => children.delete(c));
  return c;
}

/** Run `fspl ARGS` to the end: status, stdout, stderr. */
export function runFspl(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string | Buffer } = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [FSPL_BIN, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.add(c);
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    c.on('close', (status) => {
      children.delete(c);
      resolve({ status, stdout, stderr });
    });
    c.stdin.end(opts.input ?? '');
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A seeded generator of whole numbers below n (a linear congruential one), so that property tests repeat. */
export function seeded(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
}

type TransitionDef = NetDefinition['transitions'][string];

/**
 * A net of one JavaScript transition `t` from place `a` to place `b` in `dir` (not initialised); `extra` adds to t's
 * definition.
 */
export function fnNet(dir: string, fn: NonNullable<TransitionDef['fn']>, extra: Partial<TransitionDef> = {}): Net {
  return Net.define({ dir, places: { a: {}, b: {} }, transitions: { t: { in: 'a', out: 'b', fn, ...extra } } });
}

/** The first line of a child's stdout that matches. */
export function lineOf(child: ChildProcess, re: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    child.stdout!.on('data', (d) => {
      out += d;
      const m = re.exec(out);
      if (m) resolve(m);
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
  });
}
