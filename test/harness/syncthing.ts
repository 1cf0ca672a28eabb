/**
 * Two real Syncthing instances (Debian's `syncthing`) sharing one folder, for tests: side A has it
 * send-only, side B receive-only (both configurable).
 *
 * Nothing may leave the machine, so two independent measures are taken:
 * - Both instances run inside ONE new network namespace that has nothing but loopback
 *   (`unshare --net`, then `ip link set lo up`); they also get their own PID namespace, so that
 *   killing its first process (a small bash script) kills every process in it, and that script
 *   exits as soon as the test process goes away (its stdin, a pipe from us, reaches EOF).
 *   Unprivileged users get the namespaces through a user namespace (`unshare --map-root-user`).
 * - config.xml switches off global and local discovery, relays, NAT traversal (UPnP/NAT-PMP),
 *   STUN, usage reporting (urAccepted -1), crash reporting and upgrades, and names each device's
 *   address as tcp://127.0.0.1:PORT; both listen on 127.0.0.1 only.
 * The file system is shared with the namespace, so the test sees both folders directly.
 *
 * The REST API: each instance's GUI/API listens on a UNIX socket in its home (Syncthing's
 * `unix://` GUI address), which is a file, not a network address: the test process outside the
 * namespace reaches it without nsenter. `api(side, method, path, body)` does that.
 *
 * Ports: inside a fresh network namespace every port is free, so the sync ports are fixed
 * (22001 for A, 22002 for B); pairs started in parallel each have their own namespace.
 *
 * See README.md beside this file.
 */

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { alive, cleanupOnExit, descendants, killTree, ppidOf, waitFor } from './proc.js';

export const SYNCTHING_BIN = 'syncthing';

export type Side = 'a' | 'b';
export type FolderType = 'sendonly' | 'receiveonly' | 'sendreceive';

export interface SyncthingPairOptions {
  /** Side A's folder (default: a new directory in the temp dir). Created if missing. */
  pathA?: string;
  /** Side B's folder (default: a new directory in the temp dir). Created if missing. */
  pathB?: string;
  /** Folder types (default: A sendonly, B receiveonly). */
  typeA?: FolderType;
  typeB?: FolderType;
  /** Folder ID (default 'fspl'). */
  folderId?: string;
  /** Lines of .stignore written into both folders (default: none, no .stignore). */
  ignores?: string[];
  /** Full rescan interval in seconds (default 3600: the watcher, or rescan(), finds changes). */
  rescanIntervalS?: number;
  /** Whether the inotify watcher is on (default true). */
  fsWatcherEnabled?: boolean;
  /** Seconds the watcher gathers changes before scanning them (default 1; Syncthing's own is 10). */
  fsWatcherDelayS?: number;
  /** STTRACE facilities for the logs (default 'model': pulls, temp files, renames). */
  trace?: string;
  /** How long startup may take, until both are connected and the folder is idle (default 30000 ms). */
  readyTimeoutMs?: number;
}

export interface SyncthingInstance {
  side: Side;
  deviceId: string;
  /** Its Syncthing home (config.xml, keys, database). */
  home: string;
  /** Its folder. */
  folder: string;
  folderType: FolderType;
  /** Its stdout/stderr: the log with STTRACE debug lines (grep it). */
  logPath: string;
  /** Its GUI/API UNIX socket. */
  apiSocket: string;
  apiKey: string;
  /** tcp://127.0.0.1:PORT (inside the namespace). */
  listenAddress: string;
  /** Its pid as seen from outside the namespace. */
  pid: number;
}

export interface SyncthingPair {
  a: SyncthingInstance;
  b: SyncthingInstance;
  folderId: string;
  /** The harness's temp dir (homes, logs, default folders). */
  dir: string;
  /** The pid (outside) of the process whose death takes the whole namespace with it. */
  nsPid: number;
  /** A REST call on one side's API; JSON bodies and answers are (de)serialised. Throws on HTTP >= 400. */
  api<T = unknown>(side: Side, method: string, apiPath: string, body?: unknown): Promise<T>;
  /** Ask one side to scan its folder now (the whole folder, or one path in it). */
  rescan(side: Side, sub?: string): Promise<void>;
  /** Whether both sides see each other connected. */
  connected(): Promise<boolean>;
  /** Stop both instances (the whole namespace), remove the temp dir. Safe to call twice. */
  stop(): Promise<void>;
}

/** Why this machine cannot run the pair (undefined: it can), and the unshare flags that work here. */
let probed: { problem?: string; unshareArgs: string[] } | undefined;
export function netnsSupport(): { problem?: string; unshareArgs: string[] } {
  if (probed) return probed;
  const base = ['--net', '--pid', '--fork', '--kill-child'];
  const candidates =
    process.getuid?.() === 0
      ? [base, ['--user', '--map-root-user', ...base]]
      : [['--user', '--map-root-user', ...base]];
  let last = '';
  for (const args of candidates) {
    const r = spawnSync('unshare', [...args, '--', 'ip', 'link', 'set', 'lo', 'up'], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    if (r.status === 0) return (probed = { unshareArgs: args });
    last = (r.stderr || r.error?.message || `exit ${r.status}`).trim();
  }
  return (probed = {
    problem: `permission to make a network namespace (unshare --net; ip link set lo up): ${last}`,
    unshareArgs: [],
  });
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

async function generate(home: string): Promise<string> {
  const r = await execa(SYNCTHING_BIN, ['generate', `--home=${home}`, '--no-default-folder'], {
    all: true,
    env: { HOME: home },
    reject: false,
  });
  const m = /Device ID:\s*([A-Z0-9-]{63})/.exec(r.all ?? '');
  if (r.exitCode !== 0 || !m) throw new Error(`syncthing generate failed: ${r.all}`);
  return m[1];
}

interface Side0 {
  side: Side;
  home: string;
  folder: string;
  type: FolderType;
  deviceId: string;
  port: number;
  apiKey: string;
  apiSocket: string;
}

/**
 * One instance's config.xml. Only A dials (B knows A's address as "dynamic", which with discovery
 * off resolves to nothing): Syncthing dials from its listening port, so two instances dialling
 * each other at once make one TCP connection by simultaneous open, on which both wait for the
 * other's TLS hello until a 20 s timeout. B accepts A's connection, and A redials every second.
 */
function configXml(me: Side0, peer: Side0, folderId: string, o: SyncthingPairOptions): string {
  const device = (s: Side0, address: string) =>
    `    <device id="${s.deviceId}" name="${s.side}" compression="metadata" ` +
    `introducer="false" skipIntroductionRemovals="false" introducedBy="">
        <address>${address}</address>
        <paused>false</paused>
        <autoAcceptFolders>false</autoAcceptFolders>
    </device>`;
  return (
    `<configuration version="36">
    <folder id="${xmlEscape(folderId)}" label="${xmlEscape(folderId)}" path="${xmlEscape(me.folder)}` +
    `" type="${me.type}" rescanIntervalS="${o.rescanIntervalS ?? 3600}" fsWatcherEnabled="` +
    `${o.fsWatcherEnabled ?? true}" fsWatcherDelayS="${o.fsWatcherDelayS ?? 1}" ignorePerms="false" ` +
    `autoNormalize="true">
        <filesystemType>basic</filesystemType>
        <device id="${me.deviceId}" introducedBy=""></device>
        <device id="${peer.deviceId}" introducedBy=""></device>
        <minDiskFree unit="%">0</minDiskFree>
        <markerName>.stfolder</markerName>
        <paused>false</paused>
    </folder>
${device(me, `tcp://127.0.0.1:${me.port}`)}
${device(peer, me.side === 'a' ? `tcp://127.0.0.1:${peer.port}` : 'dynamic')}
    <gui enabled="true" tls="false" debugging="false">
        <address>${xmlEscape(me.apiSocket)}</address>
        <apikey>${me.apiKey}</apikey>
        <insecureSkipHostcheck>true</insecureSkipHostcheck>
        <theme>default</theme>
    </gui>
    <options>
        <listenAddress>tcp://127.0.0.1:${me.port}</listenAddress>
        <globalAnnounceServer></globalAnnounceServer>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <announceLANAddresses>false</announceLANAddresses>
        <relaysEnabled>false</relaysEnabled>
        <natEnabled>false</natEnabled>
        <stunServer></stunServer>
        <stunKeepaliveStartS>0</stunKeepaliveStartS>
        <stunKeepaliveMinS>0</stunKeepaliveMinS>
        <urAccepted>-1</urAccepted>
        <urSeen>3</urSeen>
        <urURL></urURL>
        <crashReportingEnabled>false</crashReportingEnabled>
        <crashReportingURL></crashReportingURL>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <upgradeToPreReleases>false</upgradeToPreReleases>
        <releasesURL></releasesURL>
        <startBrowser>false</startBrowser>
        <reconnectionIntervalS>1</reconnectionIntervalS>
        <minHomeDiskFree unit="%">0</minHomeDiskFree>
        <setLowPriority>false</setLowPriority>
        <restartOnWakeup>false</restartOnWakeup>
    </options>
</configuration>
`
  );
}

function apiCall<T>(inst: SyncthingInstance, method: string, apiPath: string, body?: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        socketPath: inst.apiSocket,
        method,
        path: apiPath,
        headers: {
          Host: 'localhost',
          'X-API-Key': inst.apiKey,
          ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : {}),
        },
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 500) >= 400)
            return reject(new Error(`${inst.side}: ${method} ${apiPath}: HTTP ${res.statusCode} ${text.trim()}`));
          try {
            resolve((text ? JSON.parse(text) : undefined) as T);
          } catch {
            resolve(text as T);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${inst.side}: ${method} ${apiPath}: timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export async function startSyncthingPair(opts: SyncthingPairOptions = {}): Promise<SyncthingPair> {
  const ns = netnsSupport();
  if (ns.problem) throw new Error(`startSyncthingPair: no ${ns.problem}`);
  const folderId = opts.folderId ?? 'fspl';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-st-'));
  let nsChild: ChildProcess | undefined;
  let forget: () => void = () => {};
  try {
    const sides: Side0[] = await Promise.all(
      (['a', 'b'] as const).map(async (side, i) => {
        const home = path.join(dir, side);
        const folder = path.resolve((side === 'a' ? opts.pathA : opts.pathB) ?? path.join(dir, `folder-${side}`));
        const deviceId = await generate(home);
        return {
          side,
          home,
          folder,
          type: (side === 'a' ? opts.typeA : opts.typeB) ?? (side === 'a' ? 'sendonly' : 'receiveonly'),
          deviceId,
          port: 22001 + i,
          apiKey: randomBytes(16).toString('hex'),
          apiSocket: path.join(home, 'api.sock'),
        };
      }),
    );
    const [a0, b0] = sides;
    for (const [me, peer] of [
      [a0, b0],
      [b0, a0],
    ]) {
      fs.writeFileSync(path.join(me.home, 'config.xml'), configXml(me, peer, folderId, opts));
      // Syncthing refuses a folder without its marker unless it made the folder itself.
      fs.mkdirSync(path.join(me.folder, '.stfolder'), { recursive: true });
      if (opts.ignores) fs.writeFileSync(path.join(me.folder, '.stignore'), `${opts.ignores.join('\n')}\n`);
    }

    // PID 1 of the new namespaces: brings loopback up, starts both, and exits (killing all in the
    // namespace) when its stdin, a pipe from this process, closes.
    const start = (s: Side0) =>
      `HOME=${shellQuote(s.home)} ${SYNCTHING_BIN} serve --home=${shellQuote(s.home)} ` +
      `--no-browser --no-restart --no-upgrade --no-default-folder --skip-port-probing ` +
      `--logflags=7 >${shellQuote(path.join(s.home, 'syncthing.log'))} 2>&1 </dev/null &`;
    const script = [
      'set -e',
      'ip link set lo up',
      // STMONITORED: run the server itself, without the monitor process Syncthing would put above it.
      // STHASHING: name the SHA-256 package, which skips a ~1 s benchmark at every start.
      'export STNODEFAULTFOLDER=1 STNOUPGRADE=1 STNORESTART=1 STMONITORED=1 STHASHING=minio',
      `export STTRACE=${shellQuote(opts.trace ?? 'model')}`,
      'unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY',
      // B first; A, the side that dials, once B listens (A would otherwise wait ~5 s to redial).
      start(b0),
      'b=$!',
      `until grep -q ' 0100007F:${b0.port.toString(16).toUpperCase()} ` +
        `00000000:0000 0A ' /proc/net/tcp; do kill -0 $b; sleep 0.02; done`,
      start(a0),
      'cat >/dev/null || true',
    ].join('\n');
    const logPath = path.join(dir, 'namespace.log');
    const log = fs.openSync(logPath, 'a');
    const child = spawn('unshare', [...ns.unshareArgs, '--', 'bash', '-c', script], { stdio: ['pipe', log, log] });
    fs.closeSync(log);
    nsChild = child;
    // Should this process end without stop(): its end closes the script's stdin, which ends the
    // namespace; the temp dir goes here.
    forget = cleanupOnExit(() => fs.rmSync(dir, { recursive: true, force: true }));
    child.on('error', () => {});
    child.stdin!.on('error', () => {});

    const pidOf = async (s: Side0) =>
      waitFor(`syncthing ${s.side} to start (see ${logPath})`, () => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`the namespace exited: ${fs.readFileSync(logPath, 'utf8')}`);
        return descendants(child.pid!).find((p) => {
          try {
            return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').includes(`--home=${s.home}`);
          } catch {
            return false;
          }
        });
      });
    const [pidA, pidB] = await Promise.all([pidOf(a0), pidOf(b0)]);
    const inst = (s: Side0, pid: number): SyncthingInstance => ({
      side: s.side,
      deviceId: s.deviceId,
      home: s.home,
      folder: s.folder,
      folderType: s.type,
      logPath: path.join(s.home, 'syncthing.log'),
      apiSocket: s.apiSocket,
      apiKey: s.apiKey,
      listenAddress: `tcp://127.0.0.1:${s.port}`,
      pid,
    });
    const a = inst(a0, pidA);
    const b = inst(b0, pidB);
    const bySide = { a, b };

    const api = <T>(side: Side, method: string, apiPath: string, body?: unknown) =>
      apiCall<T>(bySide[side], method, apiPath, body);
    const connected = async () => {
      const [ca, cb] = await Promise.all([
        api<{ connections: Record<string, { connected: boolean }> }>('a', 'GET', '/rest/system/connections'),
        api<{ connections: Record<string, { connected: boolean }> }>('b', 'GET', '/rest/system/connections'),
      ]);
      return !!ca.connections[b.deviceId]?.connected && !!cb.connections[a.deviceId]?.connected;
    };
    const folderState = async (side: Side) =>
      (await api<{ state: string }>(side, 'GET', `/rest/db/status?folder=${encodeURIComponent(folderId)}`)).state;

    const deadline = Date.now() + (opts.readyTimeoutMs ?? 30_000);
    const left = () => Math.max(1000, deadline - Date.now());
    const explain = () => `\n--- a log tail:\n${tail(a.logPath)}\n--- b log tail:\n${tail(b.logPath)}`;
    try {
      await waitFor('both instances to connect to each other', connected, left(), 100);
      await waitFor(
        'the folder to be idle on both sides',
        async () => (await folderState('a')) === 'idle' && (await folderState('b')) === 'idle',
        left(),
        100,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}${explain()}`);
    }

    let stopped = false;
    return {
      a,
      b,
      folderId,
      dir,
      nsPid: child.pid!,
      api,
      rescan: async (side, sub) => {
        await api(
          side,
          'POST',
          `/rest/db/scan?folder=${encodeURIComponent(folderId)}${sub ? `&sub=${encodeURIComponent(sub)}` : ''}`,
        );
      },
      connected,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        await killNamespace(child, [pidA, pidB]);
        fs.rmSync(dir, { recursive: true, force: true });
        forget();
      },
    };
  } catch (e) {
    if (nsChild) await killNamespace(nsChild, []);
    fs.rmSync(dir, { recursive: true, force: true });
    forget();
    throw e;
  }
}

function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Kill the namespace's first process (the bash script, PID 1 inside): the kernel then kills every
 * other process in the namespace and reaps them before that process counts as exited, so once
 * unshare (its parent, which reaps it and exits) is gone, so is everything that ran inside.
 */
async function killNamespace(child: ChildProcess, pids: number[]): Promise<void> {
  const exited =
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((r) => child.once('exit', () => r()));
  const init = descendants(child.pid!).find((p) => ppidOf(p) === child.pid);
  child.stdin?.end();
  try {
    process.kill(init ?? child.pid!, 'SIGKILL');
  } catch {
    /* already gone */
  }
  const late = setTimeout(() => killTree(child.pid!), 5000); // should the namespace not die
  await exited;
  clearTimeout(late);
  await waitFor('the namespace processes to exit', () => pids.every((p) => !alive(p)), 10_000, 20);
}

/** Resolves with the file's contents once it exists and has the expected size or content (if given). */
export async function waitForFile(
  file: string,
  timeoutMs = 15_000,
  expect?: { size?: number; content?: string | Buffer },
): Promise<Buffer> {
  return waitFor(
    `${file} to appear${expect ? ' complete' : ''}`,
    () => {
      let data: Buffer;
      try {
        data = fs.readFileSync(file);
      } catch {
        return undefined;
      }
      if (expect?.size !== undefined && data.length !== expect.size) return undefined;
      if (expect?.content !== undefined && !data.equals(Buffer.from(expect.content))) return undefined;
      return data;
    },
    timeoutMs,
    50,
  );
}

/** Resolves once the path is gone. */
export async function waitForGone(file: string, timeoutMs = 15_000): Promise<void> {
  await waitFor(`${file} to disappear`, () => !fs.existsSync(file), timeoutMs, 50);
}
