/** The queue-process progress line: shown on a terminal, never in a pipe, off with --no-progress. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProgressLine } from '../../src/cli/progress.js';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/prepare.js';
import { Queue } from '../../src/queue.js';
import { FSPL_BIN, tempDir } from '../helpers.js';
import { onTerminal } from './terminal.js';

function fakeTerminal() {
  let written = '';
  const out = { columns: 60, write: (s: string) => ((written += s), true) } as unknown as NodeJS.WriteStream;
  return { out, written: () => written };
}

describe('ProgressLine', () => {
  it('counts jobs done and waiting, with rate and ETA, and clears itself', () => {
    const t = fakeTerminal();
    const p = new ProgressLine(t.out);
    p.update({ type: 'scan', waiting: 10 });
    p.update({ type: 'start', seq: 1n, filename: 'f' });
    p.update({ type: 'end', seq: 1n, filename: 'f', ok: true, why: '' });
    p.update({ type: 'end', seq: 2n, filename: 'g', ok: false, why: '' });
    const line = p.text(Date.now() + 1000);
    expect(line).toMatch(/^fspl: 2 done \(1 failed\), 8 waiting, [\d.]+ jobs\/s, ETA \d+:\d\d$/);
    p.update({ type: 'idle' });
    expect(t.written()).toContain('watching for new jobs');
    p.finish();
    expect(t.written().endsWith('\r\x1b[K')).toBe(true);
  });
});

describe('queue-process progress on stderr', () => {
  function queueOf(n: number): string {
    const dir = path.join(tempDir(), 'q');
    const q = Queue.init(dir);
    for (let i = 1; i <= n; i++) q.writeBuffer(encodeHeader(makeHeader({ seq: BigInt(i), cmd: { kind: 'NOP' } })));
    return dir;
  }

  it('is drawn when stderr is a terminal, and not with --no-progress', () => {
    const shown = onTerminal(['queue-process', '-q', queueOf(50), 'true']);
    expect(shown).toMatch(/fspl: \d+ done, \d+ waiting/);
    expect(shown).toContain('\x1b[K');
    expect(onTerminal(['queue-process', '-q', queueOf(50), '--no-progress', 'true'])).not.toMatch(/fspl: \d+ done/);
  });

  it('is never written when stderr is not a terminal', () => {
    const r = spawnSync(process.execPath, [FSPL_BIN, 'queue-process', '-q', queueOf(20), 'true'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
  });
});
