/**
 * A 1 GiB sealed packet, made from a file and from a pipe, stored with queue-write, read back
 * with queue-payload and checked by queue-process --verify: every step verifies, and every
 * process's peak RSS stays flat (far below the payload). On tmpfs (/dev/shm), so that it takes
 * seconds, not minutes.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN } from '../helpers.js';

const SHM = '/dev/shm';
const TIME = '/usr/bin/time';
const missing = [
  ...(fs.existsSync(SHM) && fs.statSync(SHM).isDirectory() ? [] : [`a tmpfs at ${SHM}`]),
  ...(fs.existsSync(TIME) ? [] : [`${TIME} (apt-get install time)`]),
];
const SIZE = 1 << 30;
/** Peak RSS allowed for one fspl process, in KiB: Node itself takes 40-60 MiB. */
const RSS_LIMIT_KIB = 200 * 1024;

let dir: string | undefined;
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describeIfPresent(
  'a 1 GiB sealed packet',
  missing,
  { what: 'large seal test', note: 'it needs a tmpfs and GNU time' },
  () => {
    it('verifies end to end with flat memory', () => {
      dir = fs.mkdtempSync(path.join(SHM, 'fspl-seal-'));
      const file = path.join(dir, 'big');
      // 1 GiB of varied bytes: a random MiB, its first bytes changed per MiB.
      const block = crypto.randomBytes(1 << 20);
      const fd = fs.openSync(file, 'w');
      const hash = crypto.createHash('sha1');
      for (let i = 0; i < SIZE >> 20; i++) {
        block.writeUInt32BE(i, 0);
        hash.update(block);
        fs.writeSync(fd, block);
      }
      fs.closeSync(fd);
      const digest = hash.digest('hex');
      const q = path.join(dir, 'q');
      const rss = path.join(dir, 'rss');
      const script = `set -o pipefail
f() { "${TIME}" -a -o "${rss}" -f %M "${process.execPath}" "${FSPL_BIN}" "$@"; }
f queue-init -q "${q}"
f prepare --seal -s "${dir}/seq" -i "${file}" | f queue-write -q "${q}"
cat "${file}" | f prepare --seal -s "${dir}/seq" -i - | f queue-write -q "${q}"
f queue-ls -q "${q}" --json | grep -c '"sealed":true'
for j in 1 2; do f queue-payload -q "${q}" -j $j | sha1sum; done
f queue-process -q "${q}" --verify sh -- -c 'sha1sum'
`;
      const r = spawnSync('bash', ['-c', script], { env: { ...process.env, TMPDIR: dir }, encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines[0]).toBe('2');
      expect(lines.slice(1)).toEqual([`${digest}  -`, `${digest}  -`, `${digest}  -`, `${digest}  -`]);
      const peaks = fs.readFileSync(rss, 'utf8').trim().split('\n').map(Number);
      expect(peaks.length).toBe(9);
      console.log(`peak RSS per fspl process (KiB): ${peaks.join(' ')}`);
      for (const kib of peaks) expect(kib).toBeLessThan(RSS_LIMIT_KIB);
      expect(fs.readdirSync(dir).sort()).toEqual(['big', 'q', 'rss', 'seq', 'seq.lock']); // the spool left nothing
    }, 300_000);
  },
);
