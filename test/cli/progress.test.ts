/** The queue-process progress line: shown on a terminal, never in a pipe, off with --no-progress. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProgressLine } from '../../src/cli/text/progress.js';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import { Queue } from '../../src/queue/queue.js';
import { FSPL_BIN, tempDir } from '../helpers.js';
import { onTerminal, screenLines } from './terminal.js';

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

describe('ProgressLine and what else is written to its terminal', () => {
  it('clears itself while a job that writes to the terminal runs, and comes back when none runs', () => {
    const t = fakeTerminal();
    const p = new ProgressLine(t.out, true);
    p.update({ type: 'scan', waiting: 3 });
    expect(t.written()).toBe('\r\x1b[Kfspl: 0 done, 3 waiting');
    p.update({ type: 'start', seq: 1n, filename: 'f' });
    expect(t.written().endsWith('\r\x1b[K')).toBe(true);
    const before = t.written().length;
    p.update({ type: 'scan', waiting: 3 }); // a scan while a job runs draws nothing
    expect(t.written().length).toBe(before);
    p.update({ type: 'end', seq: 1n, filename: 'f', ok: true, why: '' });
    expect(t.written().slice(before)).toMatch(/^\r\x1b\[Kfspl: 1 done, 2 waiting/);
  });

  it('writes log lines where it was, then draws itself again under them', () => {
    const t = fakeTerminal();
    const p = new ProgressLine(t.out);
    p.update({ type: 'scan', waiting: 3 });
    p.sink(' INFO fspl::process: hello\n');
    expect(t.written()).toBe(
      '\r\x1b[Kfspl: 0 done, 3 waiting\r\x1b[K INFO fspl::process: hello\n\r\x1b[Kfspl: 0 done, 3 waiting',
    );
  });
});

describe('queue-process progress on stderr', () => {
  function queueOf(n: number, kind: 'NOP' | 'Command' = 'NOP'): string {
    const dir = path.join(tempDir(), 'q');
    const q = Queue.init(dir);
    const cmd = kind === 'NOP' ? { kind } : { kind, params: [], env: [] };
    for (let i = 1; i <= n; i++) q.writeBuffer(encodeHeader(makeHeader({ seq: BigInt(i), cmd })));
    return dir;
  }

  it('is drawn when stderr is a terminal, and not with --no-progress', () => {
    const shown = onTerminal(['queue-process', '-q', queueOf(50), 'true']);
    expect(shown).toMatch(/fspl: \d+ done, \d+ waiting/);
    expect(shown).toContain('\x1b[K');
    expect(onTerminal(['queue-process', '-q', queueOf(50), '--no-progress', 'true'])).not.toMatch(/fspl: \d+ done/);
  });

  it("never shares a line with a job's output or a log line", () => {
    // Each job writes a line to the terminal (stdout and stderr); -l debug logs lines around each.
    const job = 'echo "job $FSPL_SEQ done"; echo "job $FSPL_SEQ said" >&2';
    const raw = onTerminal(['-l', 'debug', 'queue-process', '-q', queueOf(10, 'Command'), 'sh', '--', '-c', job]);
    expect(raw, 'the progress line was drawn').toMatch(/fspl: \d+ done, \d+ waiting/);
    // Each time cleared before anything else was written, so that none of it is left on screen.
    const lines = screenLines(raw);
    expect(lines.filter((l) => l.includes('fspl: '))).toEqual([]);
    for (let i = 1; i <= 10; i++) {
      expect(lines, `job ${i}'s lines, each alone on its line`).toContain(`job ${i} done`);
      expect(lines).toContain(`job ${i} said`);
    }
    const logs = lines.filter((l) => /fspl::/.test(l));
    expect(logs.length).toBeGreaterThan(10);
    for (const l of logs) expect(l).toMatch(/^ *(TRACE|DEBUG|INFO|WARN|ERROR) fspl::\w+: /);
  });

  it('stays on the terminal while jobs whose output goes to files run (SaveBoth), and clears itself at the end', () => {
    const raw = onTerminal([
      'queue-process',
      '-q',
      queueOf(5, 'Command'),
      '--output-to',
      'saveboth',
      'sh',
      '--',
      '-c',
      'sleep 0.25; echo out',
    ]);
    expect(screenLines(raw).join('\n').trim()).toBe('');
    // Drawn while the jobs ran: never cleared between a job's start and its end.
    expect(raw).toMatch(/fspl: [1-4] done, [1-4] waiting/);
  });

  it('is never written when stderr is not a terminal', () => {
    const r = spawnSync(process.execPath, [FSPL_BIN, 'queue-process', '-q', queueOf(20), 'true'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
  });
});
