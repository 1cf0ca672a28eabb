/**
 * A run's command as a program or as a list (src/process/command.ts): processQueues, processQueue
 * and processFd take `['sh', '-c', '...']` as Queue.process does, and refuse anything else at the
 * call with a TypeError, never a spawn failure (once an `ENOMEM`) at each queue's first job.
 */
import fs from 'node:fs';
import path from 'node:path';
import { preparePacket, processQueues, Queue } from 'filespooler';
import { describe, expect, it } from 'vitest';
import { splitCommand } from '../../src/process/command.js';
import { processQueue } from '../../src/process/process.js';
import { tempDir } from '../helpers.js';

async function queues(n: number): Promise<{ dir: string; dirs: string[] }> {
  const dir = tempDir();
  const dirs: string[] = [];
  for (let i = 0; i < n; i++) {
    const q = Queue.init(path.join(dir, `q${i}`));
    await q.write(preparePacket({ seq: 1n, payload: Buffer.from(`job of q${i}\n`) }));
    dirs.push(q.dir);
  }
  return { dir, dirs };
}

describe('a command as a program or a list', () => {
  it('processQueues and processQueue run a list command, with params after it', async () => {
    const { dir, dirs } = await queues(2);
    const out = path.join(dir, 'out');
    const summary = await processQueues(dirs, {
      command: ['sh', '-c', `cat >> "${out}"; echo "$0 $1" >> "${out}"`],
      params: ['first', 'second'],
    });
    expect(summary).toMatchObject({ processed: 2, succeeded: 2, failed: 0 });
    expect(fs.readFileSync(out, 'utf8').split('\n').sort().join('\n')).toBe(
      '\nfirst second\nfirst second\njob of q0\njob of q1',
    );
    const q = Queue.open(dirs[0]!);
    await q.write(preparePacket({ seq: 2n, payload: Buffer.from('two\n') }));
    expect(await processQueue(q, { command: ['sh', '-c', `cat >> "${out}"`] })).toMatchObject({ succeeded: 1 });
    expect(fs.readFileSync(out, 'utf8')).toMatch(/two\n$/);
  });

  it('anything else is a TypeError at the call, and no job is touched', async () => {
    const { dirs } = await queues(1);
    for (const command of [[], [''], ['sh', 5], '', 5, { program: 'sh' }] as unknown[]) {
      // Thrown as the call is made (as a missing command is), or rejected: either way before any job.
      await expect(Promise.resolve().then(() => processQueues(dirs, { command: command as string }))).rejects.toThrow(
        TypeError,
      );
    }
    expect(() => splitCommand(['sh', 5], 'x')).toThrow(
      /^x: command must be a program name or a non-empty list of strings/,
    );
    expect(Queue.open(dirs[0]!).getNext()).toBe(1n);
    expect(fs.readdirSync(path.join(dirs[0]!, 'jobs'))).toHaveLength(1);
  });
});
