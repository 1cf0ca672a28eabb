import { describe, expect, it } from 'vitest';
import { fastParse } from '../../src/cli/fastparse.js';

describe('fastParse', () => {
  it('parses ordinary command lines, filling enum defaults', () => {
    expect(fastParse(['-l', 'debug', 'queue-process', '-q', 'q', '--on-error=delete', '-n5', 'cmd', '--', 'a', '-b'])).toEqual({
      command: 'queue-process',
      args: { queuedir: 'q', 'on-error': 'delete', maxjobs: '5', command: 'cmd', 'order-by': 'Sequence', 'output-to': 'PassBoth' },
      params: ['a', '-b'],
      logLevel: 'debug',
    });
    expect(fastParse(['prepare', '-s', '-', '-i', '-'])).toEqual({
      command: 'prepare',
      args: { seqfile: '-', input: '-' },
      params: [],
      logLevel: 'info',
    });
    expect(fastParse(['queue-init', '--append-only', '--queuedir', 'q'])?.args).toEqual({ 'append-only': true, queuedir: 'q' });
    expect(fastParse(['queue-set-next', '-q', 'q', '--', '5'])?.args).toEqual({ queuedir: 'q', id: '5' });
  });

  it('leaves help, errors and anything unusual to yargs', () => {
    for (const argv of [
      [],
      ['--help'],
      ['queue-ls', '--help'],
      ['queue-ls'],
      ['queue-ls', '-q'],
      ['queue-ls', '-q', 'a', '-q', 'b'],
      ['queue-ls', '-q', 'a', 'extra'],
      ['queue-ls', '-q', 'a', '--', 'x'],
      ['queue-ls', '--bogus', '-q', 'a'],
      ['nosuch'],
      ['queue-process', '-q', 'q'],
      ['queue-init', '--append-only=yes', '-q', 'q'],
      ['-x', 'gen-uuid'],
      ['prepare-set-next', '-s', 'sf', '-1'],
    ]) {
      expect(fastParse(argv)).toBeUndefined();
    }
  });
});
