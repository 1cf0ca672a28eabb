/**
 * Hostile transition users (issue 38, docs/security.md): the runner is root; two transitions run
 * as two users made for the test, and each command leaves a process of its user's running that
 * plants symbolic links and hard links to a root-only canary under every name it can reach, as
 * fast as it can, while the runner works through batches of tokens: the firings' staging files
 * and out/ outputs, the `.temp` files of the seqfiles and the `.part` files of the places its user
 * may write. The canary is a packet whose payload is a random secret, so that a runner that
 * followed a link would carry the secret into a token.
 *
 * Afterwards: the canary is unchanged (content, owner, mode), no file under the net holds the
 * secret, and the honest transition (run as root, on places no attacker may write) delivered every
 * token, in order. Short here; `npm run test:security` runs it longer (FSPL_SECURITY_TOKENS).
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../../gate.js';
import { onPath } from '../../harness/proc.js';
import { FSPL_BIN } from '../../helpers.js';
import { makeNet, netDir, tokensIn } from '../helpers.js';

const isRoot = process.getuid?.() === 0;
const missing = [
  ...(isRoot ? [] : ['root (run the tests as root)']),
  ...['useradd', 'userdel', 'pkill', 'setsid'].filter((c) => !onPath(c)),
];
const U1 = `fsplhA${process.pid}`;
const U2 = `fsplhB${process.pid}`;
const TOKENS = Number(process.env.FSPL_SECURITY_TOKENS ?? 60);
const HARDLINKS = '/proc/sys/fs/protected_hardlinks';

/**
 * The attacker's daemon: until the stop file appears, every name it can reach becomes a link to
 * the canary (a symbolic one, then a hard one where the kernel lets it), again and again.
 */
const PLANT = `#!/bin/sh
canary=$1; staging=$2; stop=$3; shift 3
plant() { ln -sfn "$canary" "$1" 2>/dev/null; ln -f "$canary" "$1" 2>/dev/null; }
# Where no file is (ln without -f): a seqfile's .temp swapped after the runner wrote it stops the
# run (docs/security.md says so: a place's users may stop it), which is not what this measures.
plantFree() { ln -sn "$canary" "$1" 2>/dev/null; ln "$canary" "$1" 2>/dev/null; }
while [ ! -e "$stop" ]; do
  for d in "$staging"/*/; do
    for n in f.out-a f.out-b f.out-c f.stdout f.stderr f.batch f.in-src f.in-a; do plant "$d$n"; done
    for f in "$d"out/*; do [ -e "$f" ] && plant "$f"; done
    for n in f.out-a f.out-b f.out-c; do plant "\${d}out/$n"; done
  done
  for p in "$@"; do
    for n in nextseq.temp sendseq.temp received.tmp; do plantFree "$p/$n"; done
    for f in "$p"/jobs/*.part; do [ -e "$f" ] && plant "$f"; done
  done
done
`;

/** A transition's command: its daemon started once (setsid: it outlives the firing), then honest work. */
const command = (user: string, places: string[], outputs: string) =>
  `#!/bin/sh
if mkdir "$FSPL_TEST_DIR/marks/started-${user}" 2>/dev/null; then
  setsid sh "$FSPL_TEST_DIR/plant.sh" "$FSPL_TEST_CANARY" "$FSPL_TEST_DIR/net.state/staging" ` +
  `"$FSPL_TEST_DIR/stop" ${places.map((p) => `"$FSPL_TEST_DIR/places/${p}"`).join(' ')} </dev/null ` +
  `>/dev/null 2>&1 &
fi
${outputs}
`;

/**
 * Kill the attackers' daemons and wait until none is left: one still planting while the net's
 * directory is removed makes the removal fail (ENOTEMPTY), seen in CI.
 */
function killAll(): void {
  for (let tries = 0; tries < 100; tries++) {
    let left = false;
    for (const u of [U1, U2]) {
      try {
        execFileSync('pkill', ['-KILL', '-u', u], { stdio: 'ignore' });
        left = true;
      } catch {
        // pkill exits 1 when no process of u matched
      }
    }
    if (!left) return;
    execFileSync('sleep', ['0.05']);
  }
}

describeIfPresent('hostile transition users', missing, { what: 'the hostile-users tests' }, () => {
  let hardlinks: string | undefined;
  beforeAll(() => {
    for (const u of [U1, U2])
      execFileSync('useradd', ['--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', u]);
    // Hard links to another's file are refused by the kernel by default: let them through, so that
    // the runner's own checks are what stands in the way.
    try {
      hardlinks = fs.readFileSync(HARDLINKS, 'utf8').trim();
      fs.writeFileSync(HARDLINKS, '0');
    } catch {
      hardlinks = undefined;
    }
  });
  afterAll(() => {
    if (hardlinks !== undefined) fs.writeFileSync(HARDLINKS, hardlinks);
    killAll();
    for (const u of [U1, U2]) {
      try {
        execFileSync('userdel', [u], { stdio: 'ignore' });
      } catch {
        // not created
      }
    }
  });

  test(
    `${TOKENS} tokens through transitions whose users plant links everywhere they can: ` +
      `the canary is untouched, no token holds its secret, the honest transition delivers all`,
    async () => {
      // The canary: a root-only packet, in a directory others may pass through (so that a hard link
      // to it can be made) but not list.
      const secret = `SECRET-${crypto.randomBytes(16).toString('hex')}`;
      const vault = netDir();
      fs.chmodSync(vault, 0o711);
      const canary = path.join(vault, 'canary.fspl');
      fs.writeFileSync(canary, execFileSync(FSPL_BIN, ['prepare', '-s', '-', '-i', '-'], { input: secret }), {
        mode: 0o600,
      });
      const before = { bytes: fs.readFileSync(canary), stat: fs.statSync(canary) };

      const { dir, file, net } = makeNet(
        `
places: { src: {}, a: {}, b: {}, c: {}, err: {}, err2: {}, h1: {}, h2: {} }
transitions:
  evil: { in: { place: src, take: 4 }, user: ${U1}, run: "sh ./evil.sh", out: [a, b], error: err }
  evil2: { in: a, user: ${U2}, run: "sh ./evil2.sh", out: c, error: err2 }
  honest: { in: { place: h1, take: 3 }, run: "cat", out: h2 }
`,
        {
          'plant.sh': PLANT,
          // U1 reads src (its owner) and writes a and b (their group); U2 reads a, writes c.
          'evil.sh': command(U1, ['src', 'a', 'b', 'err'], 'cat > "$FSPL_OUT_a"; echo b > "$FSPL_OUT_b"'),
          'evil2.sh': command(U2, ['a', 'c', 'err2'], 'cat'),
        },
      );
      fs.chmodSync(dir, 0o755);
      fs.mkdirSync(path.join(dir, 'marks'), { mode: 0o777 });
      fs.chmodSync(path.join(dir, 'marks'), 0o1777);
      execFileSync(FSPL_BIN, ['net', 'init', file, '--permissions']);
      process.env.FSPL_TEST_DIR = dir;
      process.env.FSPL_TEST_CANARY = canary;
      try {
        for (let i = 0; i < TOKENS; i++) {
          await net.put('src', Buffer.from(`evil ${i}\n`), { key: `e${i}` });
          await net.put('h1', Buffer.from(`honest ${i}\n`), { key: `h${i}` });
        }
        await net.run({ drain: true, workers: 2 });
      } finally {
        fs.writeFileSync(path.join(dir, 'stop'), '');
        killAll();
        delete process.env.FSPL_TEST_DIR;
        delete process.env.FSPL_TEST_CANARY;
      }
      // The daemons did run: the attack was made.
      expect(fs.existsSync(path.join(dir, 'marks', `started-${U1}`))).toBe(true);
      expect(fs.existsSync(path.join(dir, 'marks', `started-${U2}`))).toBe(true);

      const after = fs.statSync(canary);
      expect(fs.readFileSync(canary).equals(before.bytes)).toBe(true);
      expect([after.uid, after.gid, after.mode]).toEqual([before.stat.uid, before.stat.gid, before.stat.mode]);
      // No file under the net holds the secret (links are not followed by this look; the hard links
      // the attackers made are the canary itself, and only its names).
      const holders: string[] = [];
      const look = (d: string) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
          const p = path.join(d, e.name);
          if (e.isDirectory()) look(p);
          else if (e.isFile() && fs.statSync(p).ino !== after.ino && fs.readFileSync(p).includes(secret))
            holders.push(path.relative(dir, p));
        }
      };
      look(dir);
      expect(holders).toEqual([]);
      // The honest transition delivered all, in order.
      const honest = await tokensIn(path.join(dir, 'places/h2'));
      expect(honest.map((t) => t.payload).join('')).toBe(
        Array.from({ length: TOKENS }, (_, i) => `honest ${i}\n`).join(''),
      );
    },
    Math.max(120_000, TOKENS * 2_000),
  );
});
