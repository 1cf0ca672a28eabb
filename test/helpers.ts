/** Shared helpers for the unit tests. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { isLocked } from '../src/sys/lock.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Golden packets written by the reference (copied from shared/vectors; see their README). */
export const VECTORS = path.join(ROOT, 'test', 'fixtures', 'vectors');
export const FSPL_BIN = path.join(ROOT, 'bin', 'fspl');

const dirs: string[] = [];

/** A fresh temporary directory, removed after the test. */
export function tempDir(prefix = 'fspl-test-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/**
 * A fresh temporary directory in memory (/dev/shm) where there is one, else as tempDir: for tests
 * of many jobs whose durability costs nothing to the logic they check (fsync is free on tmpfs).
 */
export function memTempDir(prefix = 'fspl-test-'): string {
  if (!fs.existsSync('/dev/shm')) return tempDir(prefix);
  const d = fs.mkdtempSync(path.join('/dev/shm', prefix));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * A small deterministic generator (xorshift32) for tests that choose kill or cut times at random:
 * a failing run is repeated from the seed it prints.
 */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** What `tsc --noEmit -p project` prints ('' when the project compiles), for the tests of types. */
export function typecheck(project: string): string {
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8', stdio: 'pipe' });
    return '';
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? err);
  }
}

/**
 * Fill the file system holding `file` until not one more byte fits (writing `file`, appended
 * to), then give back `leave` bytes.
 */
export function fillUp(file: string, leave = 0): void {
  const fd = fs.openSync(file, 'a');
  const chunk = Buffer.alloc(64 * 1024, 0xee);
  try {
    for (let size = chunk.length; size >= 1; size >>= 1) {
      try {
        for (;;) fs.writeSync(fd, chunk, 0, size);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      }
    }
    if (leave > 0) fs.ftruncateSync(fd, Math.max(0, fs.fstatSync(fd).size - leave));
  } finally {
    fs.closeSync(fd);
  }
}

/** Hold a lock on file from another process (flock(1)) for `seconds`; resolves once it is held. */
export async function holdElsewhere(file: string, seconds: number): Promise<ChildProcess> {
  const child = spawn('flock', ['-x', file, 'sleep', String(seconds)], { stdio: 'ignore' });
  const until = Date.now() + 10_000;
  while (!isLocked(file) && Date.now() < until) await new Promise((r) => setTimeout(r, 2));
  return child;
}
