/**
 * Signed packets through the library, as a user sees it (the package's public exports only):
 * preparePacket({ sign }), Queue.process({ allowedSigners }) with a function and a command,
 * verifyPacket, and SignatureError.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { AllowedSigners, type JobContext, preparePacket, Queue, SignatureError, verifyPacket } from 'filespooler';
import { expect, it } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { tempDir } from '../helpers.js';

const missing = ['/usr/bin/ssh-keygen'].filter((p) => !fs.existsSync(p));

async function bytesOf(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

function keys(dir: string) {
  const make = (name: string) => {
    const file = path.join(dir, name);
    expect(spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file]).status).toBe(0);
    return { file, pub: fs.readFileSync(`${file}.pub`, 'utf8').trim() };
  };
  const alice = make('alice');
  const mallory = make('mallory');
  const signers = AllowedSigners.parse(`alice@example ${alice.pub}\n`, 'test signers');
  return { alice, mallory, signers };
}

describeIfPresent('signed packets in the library', missing, { what: 'signed packet tests' }, () => {
  it(
    'preparePacket({ sign }) from bytes, a stream and a file; ' +
      'verifyPacket names the signer and refuses a changed byte',
    async () => {
      const dir = tempDir();
      const { alice, mallory, signers } = keys(dir);
      const file = path.join(dir, 'payload');
      fs.writeFileSync(file, 'from a file');
      const made = [
        await bytesOf(
          preparePacket({ seq: 1n, params: ['a'], payload: Buffer.from('bytes'), sign: { key: alice.file } }),
        ),
        await bytesOf(
          preparePacket({
            seq: 2n,
            payload: Readable.from([Buffer.from('a '), Buffer.from('stream')]),
            sign: { key: alice.file },
          }),
        ),
        await bytesOf(preparePacket({ seq: 3n, payload: { path: file }, sign: { key: alice.file } })),
        await bytesOf(preparePacket({ seq: 4n, kind: 'NOP', sign: { key: alice.file } })),
      ];
      for (const packet of made) {
        const { header, signer } = await verifyPacket(packet, signers);
        expect(signer.principal).toBe('alice@example');
        expect(signer.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
        expect(header.signature?.sha512).toHaveLength(64);
      }
      const changed = Buffer.from(made[1]!);
      changed[changed.length - 1] ^= 0x20;
      await expect(verifyPacket(changed, signers)).rejects.toThrow(
        /payload is not the signed one|payload does not match its signature/,
      );
      const theirs = await bytesOf(preparePacket({ seq: 1n, payload: Buffer.from('x'), sign: { key: mallory.file } }));
      const err = await verifyPacket(theirs, signers).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SignatureError);
      expect((err as SignatureError).code).toBe('ERR_SIGNATURE');
      expect((err as SignatureError).fingerprint).toMatch(/^SHA256:/);
      const plain = await bytesOf(preparePacket({ seq: 1n, payload: Buffer.from('x'), seal: true }));
      await expect(verifyPacket(plain, signers)).rejects.toThrow(/not signed/);
    },
  );

  it(
    'Queue.process({ allowedSigners }): a function sees only what ' +
      'alice signed, with its signer; the forgery goes to refused/',
    async () => {
      const dir = tempDir();
      const { alice, mallory, signers } = keys(dir);
      const q = Queue.init(path.join(dir, 'q'));
      await q.write(preparePacket({ seq: 1n, payload: Buffer.from('one'), sign: { key: alice.file } }));
      await q.write(preparePacket({ seq: 2n, payload: Buffer.from('PWNED'), sign: { key: mallory.file } }));
      const seen: string[] = [];
      const events: string[] = [];
      const summary = await q.process(
        async (job: JobContext) => {
          seen.push(`${job.seq} ${job.signer?.principal} ${await text(job.payload)} ${job.variables.FSPL_JOB_SIGNER}`);
        },
        {
          allowedSigners: signers,
          onEvent: (e) => e.type === 'end' && events.push(`${e.seq} ${e.refused ? 'refused' : e.ok}`),
        },
      );
      expect(seen).toEqual(['1 alice@example one alice@example']);
      expect(summary).toMatchObject({ processed: 1, succeeded: 1, failed: 0 });
      expect(events).toEqual(['2 refused', '1 true']); // refused as the scan reads it, before any job runs
      expect(fs.readdirSync(path.join(q.dir, 'refused')).sort()).toEqual(
        expect.arrayContaining([expect.stringMatching(/\.fspl\.why$/)]),
      );
      expect(q.getNext()).toBe(2n);
      // The real packet 2 runs, with a command this time.
      const out = path.join(dir, 'out');
      await q.write(preparePacket({ seq: 2n, payload: Buffer.from('two'), sign: { key: alice.file } }));
      await q.process(['sh', '-c', `echo "$FSPL_JOB_SIGNER $(cat)" > "${out}"`], { allowedSigners: signers });
      expect(fs.readFileSync(out, 'utf8')).toBe('alice@example two\n');
    },
  );
});
