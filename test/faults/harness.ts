/**
 * Fault injection for tests: the power-cut file system (../powercut/pcfs.c) in its second mode,
 * which makes chosen operations fail with ENOSPC or EIO, and real full disks on a small tmpfs.
 * The API is written down in ../harness/README.md ("../faults/harness.ts"); pcfs.c's header has
 * the model (what a failed operation changes: nothing, except a failed fsync, which loses its
 * data as on Linux).
 *
 *   const ffs = await mountFaulty();
 *   await ffs.fault({ op: 'rename', error: 'ENOSPC', when: { nth: 1 }, path: `${ffs.root}/q/nextseq` });
 *   ... run the workload, see it fail ...
 *   await ffs.clear();
 *   ... run it again, see it finish ...
 *   await ffs.unmount();
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanupOnExit } from '../harness/proc.js';
import { fillUp } from '../helpers.js';
import {
  type MountOptions,
  mountPowercut,
  type PcfsCounters,
  type PowercutFs,
  powercutMissing,
} from '../powercut/harness.js';

export { killWorkloads, spawnWorkload, type Workload, type WorkloadExit } from '../powercut/harness.js';

/** The operations a rule can make fail. `fsync` covers files and directories; `unlink` covers rmdir. */
export type FaultOp = 'write' | 'fsync' | 'rename' | 'create' | 'mkdir' | 'unlink';
export const FAULT_OPS: readonly FaultOp[] = ['write', 'fsync', 'rename', 'create', 'mkdir', 'unlink'];

export type FaultErrno = 'ENOSPC' | 'EIO' | 'EDQUOT' | 'EROFS';

/**
 * When a rule fires: the Nth matching call after it is set (once, then it is spent); every call
 * from the Nth on (a disk that fills at some point); each call with probability `rate`, from a
 * PRNG seeded with `seed` (the same seed, the same choices); or every call from now on. All but
 * `nth` last until clear().
 */
export type FaultWhen = { nth: number } | { from: number } | { rate: number; seed: number } | 'always';

export interface FaultRule {
  op: FaultOp;
  error: FaultErrno;
  when: FaultWhen;
  /**
   * Only calls on these paths: a glob (fnmatch(3): `*` matches `/` too), either absolute under
   * the mount (`${root}/q/nextseq`) or from its root (`/q/nextseq`). A rename matches by either
   * of its paths. Default: every path.
   */
  path?: string;
}

export interface FaultCounters {
  /** Operations failed by a rule so far. */
  faults: number;
  /** Rules in force (an `nth` rule is spent once it fired). */
  rules: number;
  /** fsyncs that said success but made nothing durable (the file's earlier fsync had failed). */
  lies: number;
  /** Operations seen since mount, by kind (for choosing an `nth` within a workload's calls). */
  calls: Record<FaultOp, number>;
}

export interface FaultyFs extends PowercutFs {
  /** Add a rule (several may be in force; the first that fires decides the error). */
  fault(rule: FaultRule): Promise<void>;
  /** Remove every rule: the file system behaves again. */
  clear(): Promise<void>;
  faultCounters(): Promise<FaultCounters>;
}

/** What this machine lacks for fault-injection tests on FUSE (those of the power-cut tests). */
export function faultsMissing(): string[] {
  return powercutMissing();
}

function whenWords(w: FaultWhen): string {
  if (w === 'always') return 'always';
  if ('nth' in w || 'from' in w) {
    const [key, n] = 'nth' in w ? ['nth', w.nth] : ['from', w.from];
    if (!Number.isInteger(n) || n < 1)
      throw new RangeError(`fault rule: ${key} must be a whole number from 1 (got ${n})`);
    return `${key}=${n}`;
  }
  if (!(w.rate >= 0 && w.rate <= 1) || !Number.isSafeInteger(w.seed) || w.seed < 0) {
    throw new RangeError(`fault rule: rate must be within 0..1 and seed a whole number (got ${JSON.stringify(w)})`);
  }
  return `rate=${w.rate} seed=${w.seed}`;
}

/** The control file's line for a rule (pcfs.c's header). */
function ruleLine(root: string, r: FaultRule): string {
  const when = whenWords(r.when);
  let glob = '';
  if (r.path !== undefined) {
    const p = r.path === root ? '/' : r.path.startsWith(`${root}/`) ? r.path.slice(root.length) : r.path;
    if (!p.startsWith('/') || /\s/.test(p))
      throw new RangeError(`fault rule: path ${JSON.stringify(r.path)} is not under ${root} (or has white space)`);
    glob = ` path=${p}`;
  }
  return `fault ${r.op} ${r.error} ${when}${glob}`;
}

/** Mount a fresh, empty pcfs (in fault mode as much as in power-cut mode: it is one file system). */
export async function mountFaulty(opts: MountOptions = {}): Promise<FaultyFs> {
  const pc = await mountPowercut(opts);
  return Object.assign(pc, {
    fault: (rule: FaultRule) => pc.control(ruleLine(pc.root, rule)),
    clear: () => pc.control('clear'),
    async faultCounters(): Promise<FaultCounters> {
      const c: PcfsCounters = await pc.counters();
      return {
        faults: c.faults,
        rules: c.rules,
        lies: c.lies,
        calls: {
          write: c.callsWrite,
          fsync: c.callsFsync,
          rename: c.callsRename,
          create: c.callsCreate,
          mkdir: c.callsMkdir,
          unlink: c.callsUnlink,
        },
      };
    },
  });
}

// ---------- real full disks ----------

/** What this machine lacks for a small tmpfs (root, and mount). */
export function tmpfsMissing(): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root (to mount a tmpfs)');
  if (spawnSync('mount', ['--version']).status !== 0) missing.push('mount (util-linux)');
  return missing;
}

export interface SmallTmpfs {
  root: string;
  /**
   * Fill it until not one more byte fits (a file `.filler` at its root); with `leave`, then give
   * that many bytes back (the filler cut shorter: `leave: 4096` leaves one page for a small file).
   */
  fill(leave?: number): void;
  /** Give the space back (remove the filler). */
  free(): void;
  /** Bytes still free. */
  available(): number;
  /** Unmount and remove the mount point. Safe to call twice. */
  unmount(): void;
}

export const FILLER = '.filler';

/**
 * Mount a tmpfs of `size` ("256k", "4m") under os.tmpdir(), with at most `inodes` inodes if
 * given. Root only. Unmounted at unmount(), or when the test process exits.
 */
export function mountTmpfs(size: string, opts: { inodes?: number } = {}): SmallTmpfs {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-tmpfs-')));
  const options = `size=${size},mode=0755${opts.inodes ? `,nr_inodes=${opts.inodes}` : ''}`;
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', root], { encoding: 'utf8' });
  if (r.status !== 0) {
    fs.rmSync(root, { recursive: true, force: true });
    throw new Error(`mount -t tmpfs -o ${options}: ${r.stderr.trim()}`);
  }
  let mounted = true;
  const unmount = () => {
    if (!mounted) return;
    mounted = false;
    if (spawnSync('umount', [root]).status !== 0) spawnSync('umount', ['-l', root]);
    fs.rmSync(root, { recursive: true, force: true });
  };
  const unregister = cleanupOnExit(unmount);
  return {
    root,
    fill(leave = 0) {
      fillUp(path.join(root, FILLER), leave);
    },
    free() {
      fs.rmSync(path.join(root, FILLER), { force: true });
    },
    available() {
      const s = fs.statfsSync(root);
      return s.bavail * s.bsize;
    },
    unmount() {
      unmount();
      unregister();
    },
  };
}
