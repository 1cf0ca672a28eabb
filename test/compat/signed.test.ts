/**
 * Signed packets (an extension: payload_sha512 and sshsig after the seal's keys in the metadata
 * map) and the reference: it reads them as ordinary packets, lists, stores and runs them; and a
 * signed packet stored by the reference is judged by ours like any other.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeCompat, fspl, type Impl, T0, tmpDir } from './harness.js';

const payload = Buffer.from(Array.from({ length: 70000 }, (_, i) => (i * 13) & 0xff));

describeCompat('signed packets and the reference', () => {
  test(
    'the reference reads a signed packet: stdin-info, stdin-payload, ' +
      'queue-write, queue-ls, queue-process; ours judges what it stored',
    async () => {
      const dir = tmpDir();
      const key = path.join(dir, 'key');
      expect(spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'k', '-f', key]).status).toBe(0);
      const signers = path.join(dir, 'allowed_signers');
      fs.writeFileSync(signers, `sender@example ${fs.readFileSync(`${key}.pub`, 'utf8')}`);
      const input = path.join(dir, 'p');
      fs.writeFileSync(input, payload);
      const made = await fspl(
        'ours',
        ['prepare', '--sign', key, '-s', path.join(dir, 'seq'), '-i', input, '--', 'arg'],
        {
          frozen: T0,
          env: { FSPL_SET_A: 'b' },
        },
      );
      expect(made.code).toBe(0);
      const packet = path.join(dir, 'signed.fspl');
      fs.writeFileSync(packet, made.stdout);
      const info = {
        ref: await fspl('ref', ['stdin-info'], { stdin: { file: packet } }),
        ours: await fspl('ours', ['stdin-info'], { stdin: { file: packet } }),
      };
      expect(info.ref.code).toBe(0);
      expect(info.ref.stdout.toString()).toBe(info.ours.stdout.toString());
      const ref = await fspl('ref', ['stdin-payload'], { stdin: { file: packet } });
      expect(ref.code).toBe(0);
      expect(ref.stdout.equals(payload)).toBe(true);
      for (const writer of ['ref', 'ours'] as Impl[]) {
        const q = path.join(dir, `q-${writer}`);
        expect((await fspl(writer, ['queue-init', '-q', q])).code).toBe(0);
        expect((await fspl(writer, ['queue-write', '-q', q], { stdin: made.stdout })).code).toBe(0);
        const ls = { ref: await fspl('ref', ['queue-ls', '-q', q]), ours: await fspl('ours', ['queue-ls', '-q', q]) };
        expect(ls.ref.stdout.toString()).toBe(ls.ours.stdout.toString());
        const out = path.join(dir, `out-${writer}`);
        const ran = {
          ref: await fspl('ref', ['queue-process', '-q', q, '--never-delete', 'sh', '--', '-c', `cat > "${out}-ref"`]),
          ours: await fspl('ours', ['queue-set-next', '-q', q, '1']).then(() =>
            fspl('ours', [
              'queue-process',
              '-q',
              q,
              '--allowed-signers',
              signers,
              'sh',
              '--',
              '-c',
              `echo "$FSPL_JOB_SIGNER" > "${out}-who"; cat > "${out}-ours"`,
            ]),
          ),
        };
        expect(ran.ref.code).toBe(0);
        expect(ran.ours.code).toBe(0);
        expect(fs.readFileSync(`${out}-ref`).equals(payload)).toBe(true);
        expect(fs.readFileSync(`${out}-ours`).equals(payload)).toBe(true);
        expect(fs.readFileSync(`${out}-who`, 'utf8')).toBe('sender@example\n');
      }
    },
  );
});
