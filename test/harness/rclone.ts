/**
 * A remote for rclone tests: Debian's rclone serving a temp directory over WebDAV
 * (`rclone serve webdav`) on a free port of 127.0.0.1, a config file naming it (`dav:`), and
 * `rclone mount`s of it (FUSE, in the foreground, one child process each).
 *
 * Nothing from ~/.config/rclone is used (every command gets `--config`). `stop()` unmounts
 * (`fusermount -uz`), stops rclone's processes and removes the temp dir; an exit hook does the
 * same if the test process ends first.
 *
 * See README.md beside this file.
 */

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { cleanupOnExit, freePort, killTree, listeningSockets, onPath, waitFor } from './proc.js';

export function rcloneMissing(): string[] {
  const missing: string[] = [];
  if (!onPath('rclone')) missing.push('rclone');
  if (!onPath('fusermount3') && !onPath('fusermount')) missing.push('fusermount (fuse3)');
  if (!fs.existsSync('/dev/fuse')) missing.push('/dev/fuse');
  return missing;
}

export interface RcloneRemote {
  dir: string;
  /** The directory the server serves: what the remote holds, as files. */
  root: string;
  /** rclone's config file: `[dav]`, the server. */
  config: string;
  port: number;
  /** Mount `dav:REMOTEPATH` at MOUNTPOINT (an existing directory); resolves once mounted. */
  mount(remotePath: string, mountpoint: string, args?: string[]): Promise<void>;
  unmount(mountpoint: string): Promise<void>;
  /** Unmount every mount made so far (the server goes on). */
  unmountAll(): Promise<void>;
  stop(): Promise<void>;
}

function mounted(mountpoint: string): boolean {
  const target = path.resolve(mountpoint);
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[4] === target);
}

function fusermountSync(mountpoint: string): void {
  const bin = onPath('fusermount3') ? 'fusermount3' : 'fusermount';
  // -z: detach even if busy (a test that failed may leave a process inside).
  if (mounted(mountpoint)) spawnSync(bin, ['-uz', mountpoint]);
}

export async function startRcloneRemote(): Promise<RcloneRemote> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-rclone-'));
  const root = path.join(dir, 'remote');
  fs.mkdirSync(root);
  const port = await freePort();
  const config = path.join(dir, 'rclone.conf');
  fs.writeFileSync(config, `[dav]\ntype = webdav\nurl = http://127.0.0.1:${port}\nvendor = other\n`);
  const log = path.join(dir, 'serve.log');
  const server = execa(
    'rclone',
    ['--config', config, 'serve', 'webdav', '--addr', `127.0.0.1:${port}`, root, '--log-file', log],
    { reject: false },
  );
  const mounts = new Map<string, ResultPromise>();
  const cleanup = () => {
    for (const [mp, p] of mounts) {
      fusermountSync(mp);
      if (p.pid) killTree(p.pid);
    }
    mounts.clear();
    if (server.pid) killTree(server.pid);
  };
  const unhook = cleanupOnExit(() => {
    cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await waitFor(
    'rclone serve webdav listening',
    () => server.pid && listeningSockets(server.pid).some((s) => s.port === port && s.address === '127.0.0.1'),
    15_000,
  );

  const remote: RcloneRemote = {
    dir,
    root,
    config,
    port,
    async mount(remotePath, mountpoint, args = []) {
      const mlog = path.join(dir, `mount-${mounts.size}.log`);
      const p = execa(
        'rclone',
        ['--config', config, 'mount', `dav:${remotePath}`, mountpoint, '--log-file', mlog, ...args],
        { reject: false },
      );
      mounts.set(mountpoint, p);
      await waitFor(
        `rclone mount at ${mountpoint}`,
        () => {
          if (p.exitCode !== null && p.exitCode !== undefined)
            throw new Error(`rclone mount exited: ${fs.readFileSync(mlog, 'utf8')}`);
          return mounted(mountpoint);
        },
        15_000,
      );
    },
    async unmount(mountpoint) {
      const p = mounts.get(mountpoint);
      fusermountSync(mountpoint);
      if (p) {
        mounts.delete(mountpoint);
        await Promise.race([p, new Promise((r) => setTimeout(r, 5_000))]);
        if (p.pid) killTree(p.pid);
      }
    },
    async unmountAll() {
      for (const mp of [...mounts.keys()]) await remote.unmount(mp);
    },
    async stop() {
      await remote.unmountAll();
      if (server.pid) killTree(server.pid);
      await server;
      unhook();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return remote;
}
