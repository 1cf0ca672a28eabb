/**
 * Power-cut tests: a FUSE file system (pcfs.c beside this file) that keeps only what fsync made
 * durable, and a way to cut the power under a workload: kill every process that works on the
 * mount, then throw away everything not durable. See pcfs.c's header for the model and
 * ../harness/README.md for how to use this.
 *
 * Processes: a workload runs in a PID namespace of its own (`unshare --pid --fork --kill-child`),
 * so one SIGKILL of its first process takes every process it started, even those that went into
 * sessions of their own (setsid) or were reparented. The kernel reaps the whole namespace before
 * that first process counts as dead, so once unshare (its parent) has exited, nothing of the
 * workload can touch the file system any more. A scan of /proc for anything else with a cwd,
 * root, executable or descriptor on the mount is the safety net.
 */

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { cleanupOnExit, onPath, ppidOf, waitFor } from '../harness/proc.js';

export const PCFS_SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pcfs.c');
/** The control file at the root of the mount (hidden from readdir). */
export const PCFS_CTL = '.pcfs-ctl';

const CFLAGS = ['-O2', '-Wall'];

function compiler(): string | undefined {
  return ['cc', 'gcc', 'clang'].find((c) => onPath(c));
}

/** What this machine lacks to run power-cut tests (empty: nothing), for describeIfPresent. */
export function powercutMissing(): string[] {
  const missing: string[] = [];
  try {
    fs.accessSync('/dev/fuse', fs.constants.R_OK | fs.constants.W_OK);
  } catch {
    missing.push('/dev/fuse (read-write)');
  }
  if (!onPath('fusermount3')) missing.push('fusermount3 (apt package fuse3)');
  if (!onPath('pkg-config')) missing.push('pkg-config');
  else if (spawnSync('pkg-config', ['--exists', 'fuse3']).status !== 0)
    missing.push('libfuse3 headers (apt package libfuse3-dev)');
  if (!compiler()) missing.push('a C compiler (cc)');
  if (!onPath('unshare')) missing.push('unshare (util-linux)');
  else if (spawnSync('unshare', ['--pid', '--fork', '--kill-child', '--', 'true'], { timeout: 10_000 }).status !== 0) {
    missing.push('permission for a PID namespace (unshare --pid: root)');
  }
  if (!onPath('setpriv')) missing.push('setpriv (util-linux), for workloads run as another user');
  return missing;
}

let built: Promise<string> | undefined;

/**
 * Compile pcfs.c once per version of its source (and of the flags), into
 * os.tmpdir()/fspl-pcfs-HASH/pcfs. Two test workers may build at once: each compiles to a name of
 * its own and renames it into place, so a reader never sees half a binary.
 */
export function buildPcfs(): Promise<string> {
  built ??= (async () => {
    const source = fs.readFileSync(PCFS_SOURCE);
    const flags = (await execa('pkg-config', ['--cflags', '--libs', 'fuse3'])).stdout
      .trim()
      .split(/\s+/)
      .filter(Boolean);
    const hash = createHash('sha256')
      .update(source)
      .update(JSON.stringify([CFLAGS, flags]))
      .digest('hex')
      .slice(0, 16);
    const dir = path.join(os.tmpdir(), `fspl-pcfs-${hash}`);
    const bin = path.join(dir, 'pcfs');
    if (fs.existsSync(bin)) return bin;
    fs.mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    const cc = compiler();
    if (!cc) throw new Error('no C compiler (cc) to build pcfs');
    try {
      await execa(cc, [...CFLAGS, PCFS_SOURCE, ...flags, '-o', tmp], { all: true });
      fs.renameSync(tmp, bin);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw new Error(`building pcfs failed: ${(err as { all?: string }).all ?? err}`);
    }
    return bin;
  })();
  built.catch(() => (built = undefined)); // a failed build may be retried
  return built;
}

export interface PcfsCounters {
  /** Generation: how many cuts this mount has had (handles from before a cut are stale). */
  gen: number;
  cuts: number;
  syncs: number;
  /** Files whose live data differs from their durable data (changed since their last fsync). */
  dirtyFiles: number;
  /** Directories whose live entries may differ from their durable ones (changed since fsyncdir). */
  dirtyDirs: number;
  undoEntries: number;
  grave: number;
  /** Times a file's durable content had to be copied aside (a change below its durable size). */
  shadowCopies: number;
  lastCutUs: number;
  lastCutInodes: number;
  /** Durable entries that named an inode found nowhere (a bug in pcfs if ever non-zero). */
  missing: number;
  /** Entries dropped to break a durable directory cycle. */
  cycles: number;
  /** Fault mode (test/faults/harness.ts): rules in force. */
  rules: number;
  /** Operations failed by a rule. */
  faults: number;
  /** fsyncs that reported success while making nothing durable (a file whose fsync failed before). */
  lies: number;
  /** Files whose failed fsync lost data that a later fsync will not bring back (until rewritten whole). */
  poisoned: number;
  /** Operations seen since mount, by kind (whether a rule matched or not). */
  callsWrite: number;
  callsFsync: number;
  callsRename: number;
  callsCreate: number;
  callsMkdir: number;
  callsUnlink: number;
}

export interface PowercutFs {
  /** The mount point: run the workload here. */
  root: string;
  /** The backing directory (pcfs's live tree; do not touch it while mounted). */
  backing: string;
  /** The temp dir holding backing, work dir and mount point. */
  dir: string;
  /** The pcfs daemon's pid. */
  pid: number;
  /**
   * The power cut: SIGKILL every running workload (spawnWorkload) and anything else using the
   * mount (not this process), wait until they are gone, then rebuild the tree from its durable
   * state. Resolves when the cut is complete.
   */
  cut(): Promise<void>;
  /** Make everything durable now (for a test's setup, before the workload starts). */
  sync(): Promise<void>;
  counters(): Promise<PcfsCounters>;
  /** Write one command (a line) to the control file: "cut", "sync", "fault ...", "clear" (pcfs.c's header). */
  control(command: string): Promise<void>;
  /** pcfs's stderr so far. */
  log(): string;
  /** Kill what uses the mount, unmount, stop pcfs, remove the temp dir. Safe to call twice. */
  unmount(): Promise<void>;
}

function mounted(mountpoint: string): boolean {
  // Field 5 of mountinfo is the mount point (octal escapes for spaces and such; ours have none).
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => {
      const f = line.split(' ');
      return f[4] === mountpoint && line.includes(' - fuse.pcfs ');
    });
}

function parseCounters(text: string): PcfsCounters {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/(\w+)=(\d+)/g))
    out[m[1].replace(/_(\w)/g, (_, c: string) => c.toUpperCase())] = Number(m[2]);
  return out as unknown as PcfsCounters;
}

export interface MountOptions {
  /**
   * Where its temp dir (backing tree, work dir, mount point) goes (default os.tmpdir()): a small
   * tmpfs, say, for a real full disk under pcfs. Deleted files keep their space until the next cut
   * or sync there (pcfs keeps them for the cut).
   */
  parent?: string;
}

/** Mount a fresh, empty pcfs under os.tmpdir() (or opts.parent). */
export async function mountPowercut(opts: MountOptions = {}): Promise<PowercutFs> {
  const bin = await buildPcfs();
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(opts.parent ?? os.tmpdir(), 'fspl-pcfs-mnt-')));
  // mkdtemp makes 0700; tests run commands as nobody on the mount, who must get through.
  fs.chmodSync(dir, 0o755);
  const backing = path.join(dir, 'backing');
  const work = path.join(dir, 'work');
  const root = path.join(dir, 'mnt');
  for (const d of [backing, root]) fs.mkdirSync(d, { mode: 0o755 });
  fs.chmodSync(backing, 0o755);

  // stdin is a pipe we never write: if this process dies, pcfs sees EOF and unmounts itself.
  const daemon = spawn(bin, ['--work', work, '--watch-stdin', backing, root], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  daemon.stderr!.setEncoding('utf8').on('data', (s: string) => {
    stderr = (stderr + s).slice(-20_000);
  });
  let exited = false;
  const exitedP = new Promise<void>((resolve) => daemon.once('exit', () => ((exited = true), resolve())));
  daemon.once('error', (e) => (stderr += `spawn error: ${e.message}\n`));

  const emergency = () => {
    killWorkloadsSync();
    spawnSync('fusermount3', ['-u', '-z', root], { stdio: 'ignore', timeout: 5000 });
    try {
      process.kill(daemon.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const unregister = cleanupOnExit(emergency);

  try {
    await waitFor(
      'pcfs to mount',
      () => {
        if (exited) throw new Error(`pcfs exited: ${stderr}`);
        return mounted(root);
      },
      10_000,
      10,
    );
  } catch (err) {
    emergency();
    unregister();
    throw err;
  }

  const ctl = path.join(root, PCFS_CTL);
  const command = async (cmd: string) => {
    try {
      await fs.promises.writeFile(ctl, `${cmd}\n`);
    } catch (err) {
      throw new Error(`pcfs ${cmd} failed: ${(err as Error).message}\n${stderr}`);
    }
  };
  let unmounted = false;

  return {
    root,
    backing,
    dir,
    pid: daemon.pid!,
    async cut() {
      await killWorkloads();
      await killMountUsers(root, [process.pid, daemon.pid!]);
      await command('cut');
    },
    sync: () => command('sync'),
    control: command,
    async counters() {
      return parseCounters(await fs.promises.readFile(ctl, 'utf8'));
    },
    log: () => stderr,
    async unmount() {
      if (unmounted) return;
      unmounted = true;
      await killWorkloads();
      await killMountUsers(root, [process.pid, daemon.pid!]);
      if ((await execa('fusermount3', ['-u', root], { reject: false })).exitCode !== 0) {
        await execa('fusermount3', ['-u', '-z', root], { reject: false });
      }
      const deadline = Date.now() + 5000;
      while (!exited && Date.now() < deadline) await sleep(10);
      if (!exited) {
        daemon.kill('SIGKILL');
        await exitedP;
      }
      fs.rmSync(dir, { recursive: true, force: true });
      unregister();
    },
  };
}

// ---------- processes ----------

/** Where a /proc/PID/{cwd,root,exe,fd/N} link points, or undefined (gone, or not ours to read). */
function procLink(p: string): string | undefined {
  try {
    return fs.readlinkSync(p);
  } catch {
    return undefined;
  }
}

/** Whether a process is gone or a zombie (a zombie has closed its files: it can do nothing more). */
function deadOrZombie(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

/**
 * The processes (other than `spare`) whose cwd, root, executable or any descriptor is on the
 * mount. Reading these /proc links does not enter the FUSE file system.
 */
export function mountUsers(mountpoint: string, spare: number[] = [process.pid]): number[] {
  const under = (p: string | undefined) => p !== undefined && (p === mountpoint || p.startsWith(`${mountpoint}/`));
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (spare.includes(pid)) continue;
    const base = `/proc/${pid}`;
    let uses = ['cwd', 'root', 'exe'].some((l) => under(procLink(`${base}/${l}`)));
    if (!uses) {
      let fds: string[] = [];
      try {
        fds = fs.readdirSync(`${base}/fd`);
      } catch {
        /* gone, or a kernel thread */
      }
      uses = fds.some((fd) => under(procLink(`${base}/fd/${fd}`)));
    }
    if (uses && !deadOrZombie(pid)) out.push(pid);
  }
  return out;
}

/** SIGKILL everything mountUsers() finds, until it finds nothing; returns the pids killed. */
export async function killMountUsers(mountpoint: string, spare: number[] = [process.pid]): Promise<number[]> {
  const killed: number[] = [];
  for (let round = 0; ; round++) {
    const users = mountUsers(mountpoint, spare);
    if (users.length === 0) return killed;
    if (round === 50) throw new Error(`processes using ${mountpoint} would not die: ${users.join(' ')}`);
    for (const pid of users) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        /* gone */
      }
    }
    await waitFor(`killed users of ${mountpoint} to die`, () => users.every(deadOrZombie), 10_000, 5);
  }
}

export interface WorkloadOptions {
  cwd?: string;
  /** The environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Written to its stdin, which is then closed (default: stdin is /dev/null). */
  input?: string | Buffer;
  /** Run as this user and group (through setpriv, inside the namespace; groups are cleared). */
  uid?: number;
  gid?: number;
}

export interface WorkloadExit {
  /** Whether kill() (or a cut) killed it. */
  killed: boolean;
  /**
   * unshare's exit code or signal. After a kill these say little: util-linux 2.38's unshare
   * exits 1 ("sigprocmask unblock failed") when its child dies of a signal.
   */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Workload {
  /** The pid of the `unshare` process (outside the namespace). */
  pid: number;
  /** Settles when it has exited and everything it started is gone. */
  exited: Promise<WorkloadExit>;
  running(): boolean;
  /** SIGKILL it and every process it started; resolves once all are gone. */
  kill(): Promise<void>;
}

const workloads = new Set<WorkloadImpl>();

class WorkloadImpl implements Workload {
  pid: number;
  exited: Promise<WorkloadExit>;
  private done = false;
  private killed = false;
  private exitSeen!: Promise<void>;

  constructor(
    private child: ChildProcess,
    input: string | Buffer | undefined,
  ) {
    this.pid = child.pid!;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    if (input !== undefined) {
      child.stdin!.on('error', () => {}); // EPIPE when it dies before reading everything
      child.stdin!.end(input);
    }
    this.exitSeen = new Promise((resolve) => child.once('exit', () => resolve()));
    this.exited = new Promise<WorkloadExit>((resolve, reject) => {
      child.once('error', (e) => {
        this.done = true;
        workloads.delete(this);
        reject(e);
      });
      child.once('close', (code, signal) =>
        resolve({
          killed: this.killed,
          code,
          signal,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
        }),
      );
    });
    this.exited.catch(() => {}); // a spawn error is for those who await it
    this.exitSeen.then(() => {
      this.done = true;
      workloads.delete(this);
    });
  }

  running(): boolean {
    return !this.done;
  }

  /** The first process of the namespace: unshare's child (its only one). */
  private nsInit(): number[] {
    if (!this.pid) return [];
    const out: number[] = [];
    for (const name of fs.readdirSync('/proc')) {
      if (/^\d+$/.test(name) && ppidOf(Number(name)) === this.pid) out.push(Number(name));
    }
    return out;
  }

  /**
   * Kill the namespace's first process, not unshare: the kernel kills and reaps the rest of the
   * namespace before that process is dead, and unshare waits for it, so unshare's exit means all
   * are gone. (Killing unshare first would leave its child to die later, reparented elsewhere.)
   */
  async kill(): Promise<void> {
    if (!this.done) this.killed = true;
    const deadline = Date.now() + 10_000;
    while (!this.done) {
      const init = this.nsInit();
      for (const pid of init) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      // No child yet: unshare has not forked; it has nothing running on the mount either.
      if (init.length === 0 && Date.now() > deadline - 9_000) this.child.kill('SIGKILL');
      await Promise.race([this.exitSeen, sleep(20)]);
      if (Date.now() > deadline) throw new Error(`workload ${this.pid} would not die`);
    }
  }

  killSync(): void {
    this.killed = true;
    for (const pid of [...this.nsInit(), this.pid]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}

/**
 * Start a workload in a PID namespace of its own; cut() (or killWorkloads()) kills it and all its
 * descendants. Its stdout and stderr are collected.
 */
export function spawnWorkload(cmd: string[], opts: WorkloadOptions = {}): Workload {
  const asUser =
    opts.uid === undefined
      ? []
      : ['setpriv', `--reuid=${opts.uid}`, `--regid=${opts.gid ?? opts.uid}`, '--clear-groups', '--'];
  const child = spawn('unshare', ['--pid', '--fork', '--kill-child', '--', ...asUser, ...cmd], {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  const w = new WorkloadImpl(child, opts.input);
  workloads.add(w);
  return w;
}

/** SIGKILL every running workload; resolves when all (and all they started) are gone. */
export async function killWorkloads(): Promise<void> {
  await Promise.all([...workloads].map((w) => w.kill()));
}

function killWorkloadsSync(): void {
  for (const w of workloads) w.killSync();
}

cleanupOnExit(killWorkloadsSync);
