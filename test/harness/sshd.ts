/**
 * A real OpenSSH server for tests: Debian's /usr/sbin/sshd, run in the foreground on a free port
 * of 127.0.0.1 only, with throwaway host and user keys in a temp dir. Tests reach it with
 * `ssh -F <config> <alias>`, so nothing from ~/.ssh or /etc/ssh/ssh_config is used, and the host
 * key is trusted from the start (StrictHostKeyChecking yes, no prompts: BatchMode yes).
 *
 * The remote side: commands run as the user running the tests (root in CI, PermitRootLogin
 * prohibit-password; as a normal user sshd runs unprivileged and can only log that same user in).
 * Its environment is set by the server (SetEnv): PATH is `remotePath` (directories you pass, for a
 * `fspl` of your choice), then the directory of the node running the tests, then the usual system
 * directories; HOME is an empty directory in the temp dir, so the shell reads no ~/.bashrc of
 * this machine's (which would be slow and change PATH). Absolute paths always work as well.
 *
 * See README.md beside this file.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { cleanupOnExit, freePort, killTree, waitFor } from './proc.js';

export const SSHD_BIN = '/usr/sbin/sshd';
export const SSH_BIN = 'ssh';

export interface SshdOptions {
  /** Host aliases in the client config, all for this server (default ['b']). */
  aliases?: string[];
  /** Directories put first on the remote PATH (e.g. the directory of the fspl under test). */
  remotePath?: string[];
  /** Extra variables for remote commands (sshd SetEnv; no spaces or quotes in values). */
  remoteEnv?: Record<string, string>;
  /** Seconds for ssh's ConnectTimeout (default 5). */
  connectTimeout?: number;
  /** How long start()/restart() wait for `ssh <alias> true` to succeed (default 15000 ms). */
  readyTimeoutMs?: number;
}

export interface Sshd {
  /** 127.0.0.1 */
  host: string;
  port: number;
  /** The user remote commands run as (the user running the tests). */
  user: string;
  /** The host aliases in the client config. */
  aliases: string[];
  /** The temp dir holding keys, configs, log and the remote HOME. */
  dir: string;
  /** The ssh client config (`ssh -F <this> <alias>`). */
  configPath: string;
  /** `['ssh', '-F', configPath]`: append an alias and a remote command. */
  argv: string[];
  /** The user's private key (for scp/rsync/sftp; they also take `-F configPath`). */
  identityPath: string;
  /** sshd's own log (-e: everything it logs goes there). */
  logPath: string;
  /** The remote HOME (an empty directory in the temp dir). */
  remoteHome: string;
  /** The listening daemon's pid (undefined while killed or stopped). */
  readonly pid: number | undefined;
  /** `[...argv, alias, remoteCommand]`, alias defaulting to the first one. */
  command(remoteCommand: string, alias?: string): string[];
  /** SIGKILL the daemon and, by default, every session under it (a host going down). Keeps the temp dir. */
  kill(opts?: { sessions?: boolean }): Promise<void>;
  /** Start the daemon again on the same port with the same keys; resolves once `ssh <alias> true` works. */
  restart(): Promise<void>;
  /** Kill everything, wait for it, remove the temp dir. Safe to call twice. */
  stop(): Promise<void>;
}

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

async function keygen(file: string, comment: string): Promise<string> {
  await execa('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
  return fs.readFileSync(`${file}.pub`, 'utf8').trim();
}

/** Whether this sshd knows a config keyword (newer OpenSSH have options older ones reject). */
async function sshdKnows(dir: string, baseConfig: string, line: string): Promise<boolean> {
  const probe = path.join(dir, 'sshd_config.probe');
  fs.writeFileSync(probe, `${baseConfig}${line}\n`);
  const r = await execa(SSHD_BIN, ['-t', '-f', probe], { reject: false });
  fs.rmSync(probe, { force: true });
  return r.exitCode === 0;
}

export async function startSshd(opts: SshdOptions = {}): Promise<Sshd> {
  const aliases = opts.aliases ?? ['b'];
  const user = os.userInfo().username;
  const isRoot = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-sshd-'));
  const remoteHome = path.join(dir, 'home');
  fs.mkdirSync(remoteHome);
  // The privilege separation directory Debian's sshd insists on when started as root.
  if (isRoot) fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });

  const hostKey = path.join(dir, 'ssh_host_ed25519_key');
  const identityPath = path.join(dir, 'id_ed25519');
  const [hostPub, userPub] = await Promise.all([
    keygen(hostKey, 'fspl-test-host'),
    keygen(identityPath, 'fspl-test-user'),
  ]);
  // Only connections from 127.0.0.1, and only with this key.
  fs.writeFileSync(path.join(dir, 'authorized_keys'), `from="127.0.0.1" ${userPub}\n`);

  const remotePath = [...(opts.remotePath ?? []), path.dirname(process.execPath), SYSTEM_PATH].join(':');
  const env = { ...opts.remoteEnv, PATH: remotePath, HOME: remoteHome };
  for (const [k, v] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) || /[\s"'\\]/.test(v))
      throw new Error(`startSshd: remote variable ${k}=${v} cannot go into sshd_config`);
  }

  const logPath = path.join(dir, 'sshd.log');
  const sshdConfigPath = path.join(dir, 'sshd_config');
  const configPath = path.join(dir, 'ssh_config');
  const knownHosts = path.join(dir, 'known_hosts');
  const connectTimeout = opts.connectTimeout ?? 5;

  const serverConfig = (port: number): string =>
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      'AddressFamily inet',
      `HostKey ${hostKey}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
      'StrictModes no',
      'UsePAM no',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'HostbasedAuthentication no',
      'PermitRootLogin prohibit-password',
      `AllowUsers ${user}`,
      'PermitUserEnvironment no',
      `SetEnv ${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
      'AcceptEnv LANG',
      'X11Forwarding no',
      'AllowTcpForwarding no',
      'AllowStreamLocalForwarding no',
      'AllowAgentForwarding no',
      'PermitTunnel no',
      'GatewayPorts no',
      'PrintMotd no',
      'PrintLastLog no',
      'UseDNS no',
      // Tests open many connections at once; the default 10:30:100 would drop some.
      'MaxStartups 200',
      'MaxSessions 100',
      'LogLevel VERBOSE',
      'Subsystem sftp internal-sftp',
      '',
    ].join('\n');

  let port = await freePort();
  // OpenSSH 9.8+ penalises sources whose connections crash or fail; tests cut connections on purpose.
  const extra = (await sshdKnows(dir, serverConfig(port), 'PerSourcePenalties no')) ? 'PerSourcePenalties no\n' : '';

  const writeConfigs = (): void => {
    fs.writeFileSync(sshdConfigPath, serverConfig(port) + extra);
    fs.writeFileSync(knownHosts, `[127.0.0.1]:${port} ${hostPub}\n`);
    const hostBlock = (alias: string): string =>
      [
        `Host ${alias}`,
        '  HostName 127.0.0.1',
        `  Port ${port}`,
        `  User ${user}`,
        `  IdentityFile ${identityPath}`,
        '  IdentitiesOnly yes',
        '  IdentityAgent none',
        `  UserKnownHostsFile ${knownHosts}`,
        '  GlobalKnownHostsFile /dev/null',
        '  StrictHostKeyChecking yes',
        '  CheckHostIP no',
        '  UpdateHostKeys no',
        '  BatchMode yes',
        '  LogLevel ERROR',
        `  ConnectTimeout ${connectTimeout}`,
        '  ServerAliveInterval 5',
        '  ServerAliveCountMax 3',
        '  ForwardAgent no',
        '  ForwardX11 no',
        '  ControlMaster no',
        '  ControlPath none',
        '',
      ].join('\n');
    fs.writeFileSync(configPath, aliases.map(hostBlock).join('\n'));
  };

  const argv = [SSH_BIN, '-F', configPath];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let stopped = false;

  const launch = async (): Promise<void> => {
    const log = fs.openSync(logPath, 'a');
    const c = spawn(SSHD_BIN, ['-D', '-e', '-f', sshdConfigPath], { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    child = c;
    let gone = false;
    exited = new Promise((resolve) => c.once('exit', () => ((gone = true), resolve())));
    c.once('error', () => {});
    try {
      await waitFor(
        `sshd on 127.0.0.1:${port} to accept \`ssh ${aliases[0]} true\``,
        async () => {
          if (gone) throw new Error(`sshd exited; its log:\n${fs.readFileSync(logPath, 'utf8').slice(-2000)}`);
          const r = await execa(argv[0], [...argv.slice(1), aliases[0], 'true'], {
            reject: false,
            stdin: 'ignore',
            timeout: 10_000,
          });
          return r.exitCode === 0;
        },
        opts.readyTimeoutMs ?? 15_000,
        100,
      );
    } catch (e) {
      if (!gone) killTree(c.pid!);
      await exited;
      child = undefined;
      throw e;
    }
  };

  // The port was free a moment ago; should another process take it first, try another.
  for (let attempt = 1; ; attempt++) {
    writeConfigs();
    try {
      await launch();
      break;
    } catch (e) {
      const bindFailed = /Address already in use|Cannot bind any address/.test(fs.readFileSync(logPath, 'utf8'));
      if (!bindFailed || attempt >= 3) {
        fs.rmSync(dir, { recursive: true, force: true });
        throw e;
      }
      port = await freePort();
    }
  }

  const forget = cleanupOnExit(() => {
    if (child) killTree(child.pid!);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const kill = async (o: { sessions?: boolean } = {}): Promise<void> => {
    const c = child;
    if (!c) return;
    child = undefined;
    if (o.sessions === false) process.kill(c.pid!, 'SIGKILL');
    else killTree(c.pid!);
    await exited;
  };

  return {
    host: '127.0.0.1',
    port,
    user,
    aliases,
    dir,
    configPath,
    argv,
    identityPath,
    logPath,
    remoteHome,
    get pid() {
      return child?.pid;
    },
    command: (remoteCommand, alias = aliases[0]) => [...argv, alias, remoteCommand],
    kill,
    restart: async () => {
      if (stopped) throw new Error('restart() after stop()');
      await kill();
      await launch();
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await kill();
      fs.rmSync(dir, { recursive: true, force: true });
      forget();
    },
  };
}
