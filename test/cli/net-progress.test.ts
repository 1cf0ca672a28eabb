/**
 * The `fspl net run` status line: tokens per place and firings per second, on a terminal only, off with --no-progress.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NetProgressLine } from '../../src/cli/text/net-progress.js';
import { FSPL_BIN } from '../helpers.js';
import { makeNet } from '../net/helpers.js';
import { onTerminal } from './terminal.js';

function fakeTerminal() {
  let written = '';
  const out = { columns: 200, write: (s: string) => ((written += s), true) } as unknown as NodeJS.WriteStream;
  return { out, written: () => written };
}

const T0 = 1_700_000_000_000;

describe('NetProgressLine', () => {
  it('shows tokens per place in the net file order, firings per second and counts, and clears itself', () => {
    const t = fakeTerminal();
    const p = new NetProgressLine(t.out, ['inbox', 'work', 'done']);
    p.live(
      { pid: 1, startedAt: T0, updatedAt: T0, stopping: false, transitions: {}, places: { done: 7, inbox: 3 } },
      T0,
    );
    for (let i = 0; i < 20; i++)
      p.event(
        { type: 'commit', firing: `f${i}`, transition: 'a', key: 'k', inputs: [], outputs: [], ms: 1 },
        T0 + i * 100,
      );
    p.event(
      {
        type: 'fail',
        firing: 'x',
        transition: 'a',
        key: 'k',
        reason: 'exited with status 1',
        attempt: 1,
        willRetry: false,
      },
      T0 + 2000,
    );
    expect(p.text(T0 + 2500)).toBe(
      'fspl net: inbox 3 · work 0 · done 7 | 2.0 firings/s, 0 running, 20 fired, 1 failed',
    );
    expect(t.written()).toContain('\r\x1b[Kfspl net: inbox 3');
    p.finish();
    expect(t.written().endsWith('\r\x1b[K')).toBe(true);
  });
});

describe('net run progress on stderr', () => {
  const NET = `
places:
  inbox: {}
  done: {}
transitions:
  move: { in: inbox, out: done, run: [cat] }
`;

  async function netWithTokens(n: number): Promise<string> {
    const { file, net } = makeNet(NET);
    for (let i = 0; i < n; i++) await net.put('inbox', Buffer.from(`t${i}`));
    return file;
  }

  it('is drawn when stderr is a terminal, and not with --no-progress', async () => {
    const shown = onTerminal(['net', 'run', '--drain', await netWithTokens(30)]);
    expect(shown).toMatch(/fspl net: inbox \d+ · done \d+ \| [\d.]+ firings\/s/);
    expect(shown).toContain('\x1b[K');
    expect(onTerminal(['net', 'run', '--drain', '--no-progress', await netWithTokens(30)])).not.toMatch(/fspl net:/);
  });

  it('is never written when stderr is not a terminal', async () => {
    const r = spawnSync(process.execPath, [FSPL_BIN, 'net', 'run', '--drain', await netWithTokens(10)], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    expect(r.stderr).not.toMatch(/fspl net:|\x1b\[K/);
  });
});
