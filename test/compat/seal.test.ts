/**
 * Sealed packets (an extension: payload_len and payload_crc32 in the metadata map) against the
 * reference, both ways: the reference reads our sealed packets as ordinary ones (it ignores map
 * keys it does not know), and sealed jobs stored or listed by the reference are checked by ours.
 * Without --seal our packets stay byte-identical to the reference's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeCompat, expectBytes, fspl, type Impl, T0, tmpDir } from './harness.js';

const payload = Buffer.from(Array.from({ length: 70000 }, (_, i) => (i * 7) & 0xff));

describeCompat('sealed packets and the reference', () => {
  test('without --seal, prepare writes the same bytes as the reference; with it, two more keys', async () => {
    const dir = tmpDir();
    const input = path.join(dir, 'p');
    fs.writeFileSync(input, payload);
    const args = ['prepare', '-s', '-', '-i', input, '--', 'x'];
    const opts = { frozen: T0, env: { FSPL_SET_A: 'b' } };
    const ref = await fspl('ref', args, opts);
    const ours = await fspl('ours', args, opts);
    expectBytes(ours.stdout, ref.stdout, 'unsealed packet');
    const sealed = await fspl('ours', [...args.slice(0, 5), '--seal', ...args.slice(5)], opts);
    expect(sealed.stdout.length).toBe(
      ref.stdout.length + 'payload_len'.length + 1 + 5 + 'payload_crc32'.length + 1 + 5,
    );
    expect(sealed.stdout.subarray(sealed.stdout.length - payload.length).equals(payload)).toBe(true);
  });

  test(
    'the reference reads a sealed packet: stdin-info, ' + 'stdin-payload, queue-write, queue-ls, queue-process',
    async () => {
      const dir = tmpDir();
      const input = path.join(dir, 'p');
      fs.writeFileSync(input, payload);
      const packet = path.join(dir, 'sealed.fspl');
      const made = await fspl('ours', ['prepare', '--seal', '-s', path.join(dir, 'seq'), '-i', input, '--', 'arg'], {
        frozen: T0,
      });
      expect(made.code).toBe(0);
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
      // Stored by the reference, listed and processed by both.
      for (const writer of ['ref', 'ours'] as Impl[]) {
        const q = path.join(dir, `q-${writer}`);
        expect((await fspl(writer, ['queue-init', '-q', q])).code).toBe(0);
        expect((await fspl(writer, ['queue-write', '-q', q], { stdin: made.stdout })).code).toBe(0);
        const ls = { ref: await fspl('ref', ['queue-ls', '-q', q]), ours: await fspl('ours', ['queue-ls', '-q', q]) };
        expect(ls.ref.stdout.toString()).toBe(ls.ours.stdout.toString());
        const out = path.join(dir, `out-${writer}`);
        for (const reader of ['ref', 'ours'] as Impl[]) {
          const r = await fspl(reader, [
            'queue-process',
            '-q',
            q,
            '--never-delete',
            'sh',
            '--',
            '-c',
            `cat > "${out}-${reader}"`,
          ]);
          expect(r.code).toBe(0);
          expect(fs.readFileSync(`${out}-${reader}`).equals(payload)).toBe(true);
          await fspl(reader, ['queue-set-next', '-q', q, '1']);
        }
      }
    },
  );

  test('a sealed packet cut short: the reference takes what came, ours refuses it', async () => {
    const dir = tmpDir();
    const input = path.join(dir, 'p');
    fs.writeFileSync(input, payload);
    const made = await fspl('ours', ['prepare', '--seal', '-s', '-', '-i', input]);
    const cut = made.stdout.subarray(0, made.stdout.length - 1000);
    const ref = await fspl('ref', ['stdin-payload'], { stdin: cut });
    expect(ref.code).toBe(0);
    expect(ref.stdout.length).toBe(payload.length - 1000);
    const ours = await fspl('ours', ['stdin-payload'], { stdin: cut });
    expect(ours.code).toBe(1);
    expect(ours.stderr).toBe(
      `Error: Payload ends early: ${payload.length - 1000} of ${payload.length} bytes (cut short in transit?)\n`,
    );
    // A sealed job cut short in a queue the reference wrote: ours fails it, unrun.
    const q = path.join(dir, 'q');
    await fspl('ref', ['queue-init', '-q', q]);
    expect((await fspl('ref', ['queue-write', '-q', q], { stdin: cut })).code).toBe(0);
    const marker = path.join(dir, 'ran');
    const r = await fspl('ours', ['queue-process', '-q', q, 'sh', '--', '-c', `touch "${marker}"`]);
    expect(r.code).toBe(1);
    expect(fs.existsSync(marker)).toBe(false);
    expect(fs.readdirSync(path.join(q, 'jobs'))).toHaveLength(1);
  });

  test('packets the reference writes are read by ours as before (unsealed)', async () => {
    const dir = tmpDir();
    const input = path.join(dir, 'p');
    fs.writeFileSync(input, payload);
    const made = await fspl('ref', ['prepare', '-s', '-', '-i', input]);
    const ours = await fspl('ours', ['stdin-payload'], { stdin: made.stdout });
    expect(ours.code).toBe(0);
    expect(ours.stdout.equals(payload)).toBe(true);
    const q = path.join(dir, 'q');
    await fspl('ours', ['queue-init', '-q', q]);
    await fspl('ours', ['queue-write', '-q', q], { stdin: made.stdout });
    expect(JSON.parse((await fspl('ours', ['queue-ls', '-q', q, '--json'])).stdout.toString()).sealed).toBe(false);
  });
});
