/**
 * docs/transports.md's "Two NNCP nodes, step by step": its shell blocks (between the
 * `<!-- nncp-setup:begin -->`/`end` and `<!-- nncp-stick:begin -->`/`end` markers) run as
 * written, with `sh -eu`, in an empty directory, our fspl on the PATH and an NNCPCFG naming no
 * file in the environment (the set-up unsets it). Two real NNCP nodes are made, multicast off, and
 * a packet goes from an outbox through `queue-send --nncp-cfg` and a directory standing for a USB
 * stick into the receiver's queue. What the page says of NNCPCFG is checked on the installed NNCP.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { onPath } from '../harness/proc.js';
import { ROOT, tempDir } from '../helpers.js';
import { fsplPath, jobFiles } from './fspl.js';

const TOOLS = ['nncp-cfgnew', 'nncp-cfgdir', 'nncp-exec', 'nncp-stat', 'nncp-xfer', 'nncp-toss'];
const missing = TOOLS.filter((t) => !onPath(t));

const page = fs.readFileSync(path.join(ROOT, 'docs', 'transports.md'), 'utf8');

/** The shell block between `<!-- NAME:begin -->` and `<!-- NAME:end -->`. */
function block(name: string): string | undefined {
  const between = new RegExp(`<!-- ${name}:begin -->\\s*\`\`\`sh\\n([\\s\\S]*?)\`\`\`\\s*<!-- ${name}:end -->`).exec(
    page,
  );
  return between?.[1];
}

const setup = block('nncp-setup');
const stick = block('nncp-stick');

/** Shell text run in DIR with our fspl first on the PATH; NNCPCFG as given (default: a file that is not there). */
function sh(dir: string, script: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync('sh', ['-eu', '-c', script], {
    cwd: dir,
    encoding: 'utf8',
    env: { HOME: dir, PATH: fsplPath('ours').PATH, NNCPCFG: path.join(dir, 'no-such.hjson'), ...env },
    timeout: 60_000,
  });
}

it('docs/transports.md has both blocks', () => {
  expect(setup).toMatch(/nncp-cfgnew/);
  expect(stick).toMatch(/nncp-xfer -cfg receiver\.hjson -rx stick/);
});

describeIfPresent(
  "docs/transports.md's two NNCP nodes and USB stick",
  missing,
  { what: 'NNCP set-up docs test', note: 'apt-get install nncp' },
  () => {
    it('run as written: two nodes, multicast off, and a packet carried on the stick into the queue, once', () => {
      const dir = tempDir();
      const r = sh(dir, `${setup}\n${stick}`);
      expect(r.status, r.stderr).toBe(0);
      // queue-process cat: the packet's payload, as the page's comment says.
      expect(r.stdout.trim().split('\n').at(-1)).toBe('hello');
      expect(r.stderr).toMatch(
        /^fspl queue-send: handed 1 packet for nncp:receiver:fspl to NNCP in 1 batch; 0 packets wait, next 2$/m,
      );
      for (const node of ['sender', 'receiver']) {
        const cfg = fs.readFileSync(path.join(dir, `${node}.hjson`), 'utf8');
        expect(cfg).toMatch(/^ {2}mcd-listen: \[\]$/m);
        expect(cfg).toMatch(/^ {2}mcd-send: \{\}$/m);
        expect(cfg).not.toMatch(/sendmail|addrs/);
        // Private keys inside: the umask of the block.
        expect(fs.statSync(path.join(dir, `${node}.hjson`)).mode & 0o077).toBe(0);
      }
      expect(fs.readFileSync(path.join(dir, 'receiver.hjson'), 'utf8')).toMatch(/queue-receive/);
      expect(jobFiles(path.join(dir, 'queue'))).toEqual([]);
      expect(fs.readFileSync(path.join(dir, 'queue', 'received'), 'utf8')).toBe('1 1\n');

      // What the page says of NNCPCFG: taken over -cfg. Named the sender, nncp-stat -cfg
      // receiver.hjson lists the sender's neighbours, and nncp-toss -cfg receiver.hjson tosses
      // nothing of the receiver's, yet exits 0.
      const asSender = { NNCPCFG: path.join(dir, 'sender.hjson') };
      expect(sh(dir, 'nncp-stat -cfg receiver.hjson', asSender).stdout.split('\n')).toContain('receiver');
      const again = `unset NNCPCFG
echo again | fspl prepare --seal -s seq -i - | fspl queue-write -q outbox
fspl queue-send -q outbox --to nncp:receiver:fspl --nncp-cfg sender.hjson
nncp-xfer -cfg sender.hjson -mkdir -tx stick
nncp-xfer -cfg receiver.hjson -rx stick`;
      const sent = sh(dir, again);
      expect(sent.status, sent.stderr).toBe(0);
      const quiet = sh(dir, 'nncp-toss -cfg receiver.hjson', asSender);
      expect(quiet.status, quiet.stderr).toBe(0);
      expect(jobFiles(path.join(dir, 'queue'))).toEqual([]);
      expect(sh(dir, 'unset NNCPCFG; nncp-toss -cfg receiver.hjson').status).toBe(0);
      expect(jobFiles(path.join(dir, 'queue'))).toHaveLength(1);
    });
  },
);
