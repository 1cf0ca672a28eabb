/**
 * queue-receive with allowed signers (src/send/receive.ts): a framed packet its signature does
 * not let in goes to refused/ with its note, its number is not taken (the real one, coming
 * later, is stored), and the rest of the input is stored as usual.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { AllowedSigners, preparePacket, Queue } from 'filespooler';
import { expect, it } from 'vitest';
import { receivePackets } from '../../src/send/receive.js';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, tempDir } from '../helpers.js';
import { frame } from '../send/frame-helpers.js';

const missing = ['/usr/bin/ssh-keygen'].filter((p) => !fs.existsSync(p));

async function bytesOf(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

describeIfPresent('queue-receive with allowed signers', missing, { what: 'signed packet tests' }, () => {
  it(
    'refuses the forgery into refused/, stores the ' + 'signed ones, and the real packet of that number later',
    async () => {
      const dir = tempDir();
      const key = (name: string) => {
        const file = path.join(dir, name);
        expect(spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file]).status).toBe(0);
        return file;
      };
      const alice = key('alice');
      const mallory = key('mallory');
      const signersFile = path.join(dir, 'allowed_signers');
      fs.writeFileSync(signersFile, `alice@example ${fs.readFileSync(`${alice}.pub`, 'utf8')}`);
      const signers = AllowedSigners.load(signersFile);
      const q = path.join(dir, 'q');
      Queue.init(q);
      const signed = async (seq: number, keyFile: string) =>
        bytesOf(preparePacket({ seq: BigInt(seq), payload: Buffer.from(`job ${seq}`), sign: { key: keyFile } }));
      const input = Buffer.concat([
        frame(1, await signed(1, alice)),
        frame(2, await signed(2, mallory), 'forged-2'),
        frame(3, await signed(3, alice)),
      ]);
      const r = await receivePackets(q, Readable.from([input]), { allowedSigners: signers });
      expect(r.stored).toBe(2);
      expect(r.refused).toEqual([expect.stringMatching(/^packet 2 refused: .*not in .*allowed_signers/)]);
      expect(fs.readdirSync(path.join(q, 'refused')).sort()).toEqual(['fspl-forged-2.fspl', 'fspl-forged-2.fspl.why']);
      // Through the CLI, the real packet 2 is taken: its number was never recorded as received.
      const cli = spawnSync(process.execPath, [FSPL_BIN, 'queue-receive', '-q', q, '--allowed-signers', signersFile], {
        input: frame(2, await signed(2, alice)),
      });
      expect(cli.status, cli.stderr.toString()).toBe(0);
      const seqs = (await Queue.open(q).list()).map((j) => j.header.seq);
      expect(seqs).toEqual([1n, 2n, 3n]);
    },
  );
});
