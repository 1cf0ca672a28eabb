/**
 * A run taking a queue (src/process/queue-lock.ts): what a look leaves alone.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader, Queue } from '../../src/lowlevel.js';
import { vanishing } from '../../src/process/queue-lock.js';
import { tempDir } from '../helpers.js';

function queue(): Queue {
  return Queue.init(path.join(tempDir(), 'q'));
}

describe('vanishing: a queue being removed (or made), which a look must not put nextseq back into', () => {
  it('is not a queue with its nextseq', () => {
    expect(vanishing(queue())).toBe(false);
  });

  it('is a queue with no nextseq and nothing in jobs/, or no jobs/', () => {
    const q = queue();
    fs.rmSync(q.seqfilePath);
    expect(vanishing(q)).toBe(true);
    fs.rmSync(q.jobsDir, { recursive: true });
    expect(vanishing(q)).toBe(true);
  });

  it('is not what has no lock file (no queue, or not yet one): taking it says what is wrong', () => {
    const q = queue();
    fs.rmSync(q.seqfilePath);
    fs.rmSync(`${q.seqfilePath}.lock`);
    expect(vanishing(q)).toBe(false);
    expect(vanishing(Queue.open(path.join(tempDir(), 'nosuch')))).toBe(false);
  });

  it('is not a queue with no nextseq but a job to run: its run makes nextseq, as the reference does', () => {
    const q = queue();
    q.writeBuffer(
      encodeHeader({ seq: 1n, ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } }),
    );
    fs.rmSync(q.seqfilePath);
    expect(vanishing(q)).toBe(false);
  });
});
