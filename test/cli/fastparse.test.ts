import { describe, expect, it } from 'vitest';
import { fastParse } from '../../src/cli/parse/fastparse.js';
import { fastParseNet } from '../../src/cli/parse/net-fastparse.js';
import { parseNet } from '../../src/cli/parse/parser.js';

describe('fastParse', () => {
  it('parses ordinary command lines, filling enum defaults', () => {
    expect(fastParse(['-l', 'debug', 'queue-process', '-q', 'q', '--on-error=delete', '-n5', 'cmd', '--', 'a', '-b'])).toEqual({
      command: 'queue-process',
      args: { queuedir: ['q'], 'on-error': 'delete', maxjobs: '5', command: 'cmd', 'order-by': 'Sequence', 'output-to': 'PassBoth' },
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
    // queue-process serves many queues: -q and --queues-in repeat, each value kept in order.
    expect(fastParse(['queue-process', '-q', 'a', '-qb', '--queues-in', 'p1', '--queues-in=p2', '--jobs', '4', 'cmd'])?.args).toMatchObject({
      queuedir: ['a', 'b'],
      'queues-in': ['p1', 'p2'],
      jobs: '4',
    });
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

describe('fastParseNet (`fspl net run`)', () => {
  /** What the run handler reads (src/cli/commands/net.ts). */
  const KEYS = ['net', 'drain', 'workers', 'poll-interval', 'pollInterval', 'grace', 'stop-timeout', 'progress', 'host', 'log-level', 'logLevel'];
  const pick = (a: Record<string, unknown>) =>
    Object.fromEntries(KEYS.map((k) => [k, a[k]]).filter(([k, v]) => v !== undefined && k !== 'pollInterval' && k !== 'logLevel'));

  it('gives what yargs gives for the keys the run handler reads', async () => {
    for (const argv of [
      ['run', 'net.yaml'],
      ['run', '--drain', '--workers', '2', 'net.yaml'],
      ['-l', 'debug', 'run', 'n.yaml', '-w3', '--grace=2', '--poll-interval', '0.5', '--host', 'h1'],
      ['run', '--stop-timeout', '4', 'n.yaml', '--drain'],
    ]) {
      const fast = fastParseNet(argv);
      const full = await parseNet(argv);
      expect(full.kind).toBe('run');
      if (full.kind !== 'run') continue;
      expect(fast?.command).toBe(full.invocation.command);
      expect(fast?.logLevel).toBe(full.invocation.logLevel);
      expect(fast?.params).toEqual(full.invocation.params);
      const yargsArgs = pick(full.invocation.args);
      if (yargsArgs.drain === false) delete yargsArgs.drain; // the handler reads !!drain
      expect(pick(fast!.args)).toEqual(yargsArgs);
    }
  });

  it('leaves other commands, help, --no-progress and anything unusual to yargs', () => {
    for (const argv of [
      ['status', 'net.yaml'],
      ['run'],
      ['run', '--help'],
      ['run', '--no-progress', 'n.yaml'],
      ['run', 'n.yaml', '-l', 'debug'],
      ['run', 'n.yaml', 'extra'],
      ['run', 'n.yaml', '--', 'x'],
      ['run', '--drain', '--drain', 'n.yaml'],
      ['--bogus', 'run', 'n.yaml'],
    ]) {
      expect(fastParseNet(argv)).toBeUndefined();
    }
  });
});
