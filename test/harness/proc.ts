/**
 * Small process and polling helpers shared by the harnesses (sshd.ts, syncthing.ts).
 */
import fs from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A port on 127.0.0.1 that was free a moment ago (the kernel picks it; we close at once). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Parent pid of a process, from /proc/PID/stat (undefined when it is gone). */
export function ppidOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** All live descendants of a process (children, grandchildren...), by walking /proc. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const ppid = ppidOf(pid);
    if (ppid === undefined) continue;
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(pid);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length) for (const c of children.get(todo.pop()!) ?? []) out.push(c), todo.push(c);
  return out;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* already gone */
  }
}

/**
 * SIGKILL a process and everything below it, as a power cut would. The tree is frozen first
 * (SIGSTOP), so that nothing forks or gets reparented between listing and killing.
 */
export function killTree(root: number): void {
  const seen = new Set<number>([root]);
  signal(root, 'SIGSTOP');
  for (let round = 0; round < 3; round++) {
    for (const pid of descendants(root)) if (!seen.has(pid)) seen.add(pid), signal(pid, 'SIGSTOP');
  }
  for (const pid of seen) signal(pid, 'SIGKILL');
}

/** Poll until check() returns a truthy value (returned) or the time is up (throws, saying what). */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
      last = undefined;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message ?? last}` : ''}`,
      );
    }
    await sleep(everyMs);
  }
}

/** Whether an executable is on PATH (or at the given absolute path). */
export function onPath(cmd: string): boolean {
  if (cmd.includes('/')) return isExecutable(cmd);
  const dirs = (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin']);
  return dirs.some((d) => d && isExecutable(`${d}/${cmd}`));
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

export interface BoundSocket {
  proto: 'tcp' | 'tcp6' | 'udp' | 'udp6';
  address: string;
  port: number;
}

/** "0100007F" (IPv4, host byte order words) or 32 hex digits (IPv6) from /proc/net/* to text. */
function procAddress(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((w) => Buffer.from(w, 'hex').reverse()); // little-endian hosts
  const bytes = Buffer.concat(words);
  if (bytes.length === 4) return [...bytes].join('.');
  if (bytes.subarray(0, 12).equals(Buffer.from('00000000000000000000ffff', 'hex')))
    return `::ffff:${[...bytes.subarray(12)].join('.')}`;
  const groups = bytes
    .toString('hex')
    .match(/.{4}/g)!
    .map((g) => g.replace(/^0+(?=.)/, ''));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
}

/**
 * The sockets a process listens on (TCP in LISTEN state) or has bound (UDP), read from its own
 * /proc/PID/net tables (so in its own network namespace) and its open descriptors.
 */
export function listeningSockets(pid: number): BoundSocket[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      /* closed meanwhile */
    }
  }
  const out: BoundSocket[] = [];
  for (const proto of ['tcp', 'tcp6', 'udp', 'udp6'] as const) {
    let table: string;
    try {
      table = fs.readFileSync(`/proc/${pid}/net/${proto}`, 'utf8');
    } catch {
      continue; // no IPv6 in this kernel
    }
    for (const line of table.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9])) continue;
      if (proto.startsWith('tcp') && f[3] !== '0A') continue; // LISTEN only
      const [addr, port] = f[1].split(':');
      out.push({ proto, address: procAddress(addr), port: parseInt(port, 16) });
    }
  }
  return out;
}

const exitHooks = new Set<() => void>();
let exitHookInstalled = false;

/**
 * Run fn (synchronously) when this process exits without the test having stopped what it started
 * (a failed beforeAll, a test worker shutting down). Returns the function that unregisters it.
 */
export function cleanupOnExit(fn: () => void): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const hook of exitHooks) {
        try {
          hook();
        } catch {
          /* best effort */
        }
      }
    });
  }
  exitHooks.add(fn);
  return () => void exitHooks.delete(fn);
}
