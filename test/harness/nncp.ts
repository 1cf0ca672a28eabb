/**
 * Two NNCP nodes for tests, `a` and `b`: Debian's nncp (8.8), each node with its own config and
 * spool in a temp dir, made by `nncp-cfgnew` and then given the other as its neighbour. Nothing
 * from /etc/nncp.hjson or /var/spool/nncp is used (every command gets `-cfg`).
 *
 * Safety: multicast discovery is off on both (`mcd-listen: []`, `mcd-send: {}`), and the only
 * listener is the daemon a test starts with `online()`, on a free port of 127.0.0.1.
 *
 * What each node accepts from the other is the test's choice: exec handles (`exec`, as NNCP's
 * `neigh.NODE.exec`) and an incoming directory for files (`incoming`).
 *
 * docs/transports.md ("Two NNCP nodes, step by step") makes the same two nodes in shell, for
 * users (test/transports/nncp-setup.test.ts runs it). See README.md beside this file.
 */

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { cleanupOnExit, freePort, killTree, listeningSockets, waitFor } from './proc.js';

export const NNCP_TOOLS = [
  'nncp-cfgnew',
  'nncp-exec',
  'nncp-file',
  'nncp-xfer',
  'nncp-toss',
  'nncp-daemon',
  'nncp-call',
];

export type NodeName = 'a' | 'b';

export interface NncpNodeOptions {
  /** Exec handles this node runs for packets from the other node: handle name to argv. */
  exec?: Record<string, string[]>;
  /** Where files sent by the other node with nncp-file land. */
  incoming?: string;
}

export interface NncpNode {
  name: NodeName;
  /** Its config file (JSON, which is Hjson too): give it to every NNCP command as -cfg. */
  cfg: string;
  spool: string;
  log: string;
}

export interface NncpPair {
  dir: string;
  a: NncpNode;
  b: NncpNode;
  /** Environment for the NNCP commands (and so for the exec handles they start). */
  env: NodeJS.ProcessEnv;
  /** Run an NNCP command as node `from` (`-cfg` and `-quiet` added); rejects on a non-zero exit. */
  run(from: NodeName, tool: string, args: string[], input?: Buffer | string): Promise<void>;
  /** The outbound packets of `from` (towards the other node) as files, in its spool. */
  outbound(from: NodeName): string[];
  /** nncp-xfer: `from` writes its outbound packets into DIR, then `to` takes them from there. */
  xfer(from: NodeName, to: NodeName, dir: string, opts?: { keep?: boolean }): Promise<void>;
  /** nncp-toss on `node`: decrypt and act on what it received (run handles, write files). */
  toss(node: NodeName, args?: string[]): Promise<void>;
  /**
   * Online: `to` runs nncp-daemon on a free port of 127.0.0.1 (only for the call), `from` calls
   * it with nncp-call, and the daemon is stopped again. Packets are moved, not yet tossed.
   */
  online(from: NodeName, to: NodeName): Promise<void>;
  stop(): Promise<void>;
}

interface Keys {
  id: string;
  exchpub: string;
  exchprv: string;
  signpub: string;
  signprv: string;
  noisepub: string;
  noiseprv: string;
}

/** A new node's keys, from nncp-cfgnew's Hjson (its `self:` block, one `key: value` a line). */
async function newKeys(): Promise<Keys> {
  const { stdout } = await execa('nncp-cfgnew', ['-nocomments']);
  const self = /self: \{([\s\S]*?)\}/.exec(stdout)?.[1];
  if (!self) throw new Error(`nncp-cfgnew gave no self block:\n${stdout}`);
  const keys: Record<string, string> = {};
  for (const m of self.matchAll(/^\s*(\w+): (\S+)\s*$/gm)) keys[m[1]] = m[2];
  for (const k of ['id', 'exchpub', 'exchprv', 'signpub', 'signprv', 'noisepub', 'noiseprv']) {
    if (!keys[k]) throw new Error(`nncp-cfgnew gave no ${k}`);
  }
  return keys as unknown as Keys;
}

const pub = (k: Keys) => ({ id: k.id, exchpub: k.exchpub, signpub: k.signpub, noisepub: k.noisepub });

export async function startNncpPair(
  opts: { a?: NncpNodeOptions; b?: NncpNodeOptions; env?: NodeJS.ProcessEnv } = {},
): Promise<NncpPair> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-nncp-'));
  const keys = { a: await newKeys(), b: await newKeys() };
  const ports = { a: await freePort(), b: await freePort() };
  const node = (name: NodeName): NncpNode => ({
    name,
    cfg: path.join(dir, `${name}.hjson`),
    spool: path.join(dir, name, 'spool'),
    log: path.join(dir, name, 'log'),
  });
  const nodes = { a: node('a'), b: node('b') };
  for (const name of ['a', 'b'] as const) {
    const other: NodeName = name === 'a' ? 'b' : 'a';
    const n = nodes[name];
    fs.mkdirSync(n.spool, { recursive: true });
    const accepts = opts[name] ?? {};
    const cfg = {
      spool: n.spool,
      log: n.log,
      noprogress: true,
      'mcd-listen': [],
      'mcd-send': {},
      self: keys[name],
      neigh: {
        self: pub(keys[name]),
        [other]: {
          ...pub(keys[other]),
          addrs: { lo: `127.0.0.1:${ports[other]}` },
          ...(accepts.exec ? { exec: accepts.exec } : {}),
          ...(accepts.incoming ? { incoming: accepts.incoming } : {}),
        },
      },
    };
    fs.writeFileSync(n.cfg, JSON.stringify(cfg, null, 2), { mode: 0o600 });
  }
  const env = { ...process.env, ...opts.env };
  const daemons = new Set<ResultPromise>();

  const run = async (from: NodeName, tool: string, args: string[], input?: Buffer | string) => {
    await execa(tool, ['-cfg', nodes[from].cfg, '-quiet', ...args], { env, input: input ?? '' });
  };
  const outbound = (from: NodeName) => {
    const other = from === 'a' ? 'b' : 'a';
    const tx = path.join(nodes[from].spool, keys[other].id, 'tx');
    if (!fs.existsSync(tx)) return [];
    return fs
      .readdirSync(tx)
      .filter((f) => /^[A-Z2-7]{52}$/.test(f))
      .map((f) => path.join(tx, f));
  };
  const stopDaemons = () => {
    for (const d of daemons) if (d.pid) killTree(d.pid);
    daemons.clear();
  };
  const unhook = cleanupOnExit(() => {
    stopDaemons();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  return {
    dir,
    a: nodes.a,
    b: nodes.b,
    env,
    run,
    outbound,
    async xfer(from, to, xdir, o = {}) {
      fs.mkdirSync(xdir, { recursive: true });
      await run(from, 'nncp-xfer', ['-mkdir', ...(o.keep ? ['-keep'] : []), '-tx', xdir]);
      await run(to, 'nncp-xfer', ['-rx', xdir]);
    },
    async toss(n, args = []) {
      await run(n, 'nncp-toss', args);
    },
    async online(from, to) {
      const daemon = execa('nncp-daemon', ['-cfg', nodes[to].cfg, '-quiet', '-bind', `127.0.0.1:${ports[to]}`], {
        env,
        reject: false,
      });
      daemons.add(daemon);
      try {
        await waitFor(
          'nncp-daemon listening',
          () => daemon.pid && listeningSockets(daemon.pid).some((s) => s.port === ports[to]),
          10_000,
        );
        // Loopback only, and no multicast discovery socket (UDP): what the config promises.
        const sockets = listeningSockets(daemon.pid!);
        const stray = sockets.filter((s) => s.proto !== 'tcp' || s.address !== '127.0.0.1');
        if (stray.length) throw new Error(`nncp-daemon listens beyond 127.0.0.1/tcp: ${JSON.stringify(stray)}`);
        // Without a deadline the call lingers, waiting for more packets.
        await run(from, 'nncp-call', ['-onlinedeadline', '1', to]);
      } finally {
        if (daemon.pid) killTree(daemon.pid);
        daemons.delete(daemon);
        await daemon;
      }
    },
    async stop() {
      stopDaemons();
      unhook();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
