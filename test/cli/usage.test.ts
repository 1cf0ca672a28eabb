/**
 * fspl's usage errors, read on the grammar (src/cli/parse/read.ts): each on one line,
 * naming what the user typed (never an internal camelCase key), with "did you mean" for a near
 * miss, a missing argument named by what it is, and exit status 2 as the reference's.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { FSPL_BIN } from '../helpers.js';

function fspl(args: string[]) {
  const r = spawnSync(process.execPath, [FSPL_BIN, ...args], { input: '', encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('usage errors', () => {
  const cases: Array<[string[], string]> = [
    [['queue-proces', '-q', 'cronq', 'cat'], "unknown subcommand 'queue-proces'; did you mean 'queue-process'?"],
    [['queue-l', '-q', 'q'], "unknown subcommand 'queue-l'; did you mean 'queue-ls'?"],
    [['nosuch'], "unknown subcommand 'nosuch'"],
    [
      ['queue-process', '-q', 'cronq', '--on-eror', 'delete', 'cat'],
      "unknown option '--on-eror' for queue-process; did you mean '--on-error'?",
    ],
    [['prepare', '-s', 'sf', '--sael'], "unknown option '--sael' for prepare; did you mean '--seal'?"],
    [['queue-ls', '--queue', 'q'], "unknown option '--queue' for queue-ls; did you mean '--queuedir'?"],
    [['queue-ls', '-q', 'q', '-x'], "unknown option '-x' for queue-ls"],
    [
      ['queue-ls', '-q', 'q', '-l', 'debug'],
      "unknown option '-l' for queue-ls: the log level goes before the subcommand (fspl -l LEVEL queue-ls ...)",
    ],
    [['--log-levle', 'debug', 'queue-ls'], "unknown option '--log-levle'; did you mean '--log-level'?"],
    [['--bogus'], "unknown option '--bogus' (before the subcommand, fspl takes -l LEVEL, -V, -h and --implementation)"],
    [['queue-process', '-q', 'cronq'], 'missing COMMAND: the command to run for each job (its arguments go after --)'],
    [['stdin-process'], 'missing COMMAND: the command to run for the packet (its arguments go after --)'],
    [['queue-set-next', '-q', 'q'], 'missing ID: the sequence number the queue will process next'],
    [['queue-ls'], 'missing -q DIR: the queue directory'],
    [['queue-info', '-q', 'q'], "missing -j ID: the job's sequence number"],
    [['prepare'], "missing -s FILE: the sender's sequence file"],
    [['queue-ls', '-q'], "the option '-q' needs a value: -q DIR"],
    [['queue-process', '-q', 'q', '--timeout'], "the option '--timeout' needs a value: --timeout SECONDS"],
    [['queue-process', '-q', 'q', 'true', 'extra'], "unexpected argument 'extra' (PARAMS go after --)"],
    [['queue-ls', '-q', 'q', 'extra'], "unexpected argument 'extra'"],
    [['help', 'queue-proces'], "unknown subcommand 'queue-proces'; did you mean 'queue-process'?"],
    [['help', 'net', 'rnu'], "unknown net command 'rnu'; did you mean 'run'?"],
  ];
  it.each(cases)('fspl %j: one line that names what was typed, exit 2', (args, message) => {
    const r = fspl(args);
    const more = args[0] === 'help' && args[1] === 'net' ? 'fspl net --help' : '--help';
    expect([r.code, r.stderr, r.stdout]).toEqual([2, `error: ${message}\n\nFor more information try ${more}\n`, '']);
  });

  it('never shows an internal camelCase name or a count of arguments', () => {
    for (const args of [
      ['queue-process', '-q', 'q', '--never-delte', 'true'],
      ['queue-process', '-q', 'q', '--output-too', 'saveboth', 'true'],
      ['net', 'run', 'x.yaml', '--stop-timout', '1'],
    ]) {
      const r = fspl(args);
      expect(r.code).toBe(2);
      expect(r.stderr).not.toMatch(/[a-z][A-Z]|Unknown argument|Not enough|non-option/);
      expect(r.stderr).toMatch(/did you mean '--(never-delete|output-to|stop-timeout)'\?/);
    }
  });
});

describe('help', () => {
  it('lists fspl net among the subcommands, with where to find its own', () => {
    const r = fspl(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {2}fspl net <command> +Extension: Petri nets of queues/m);
  });

  it('fspl help net and fspl help net COMMAND show the help of fspl net and of its commands', () => {
    const net = fspl(['help', 'net']);
    expect([net.code, net.stderr]).toEqual([0, '']);
    expect(net.stdout).toBe(fspl(['net', '--help']).stdout);
    expect(net.stdout).toMatch(/fspl net run <net>/);
    const run = fspl(['help', 'net', 'run']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(fspl(['net', 'run', '--help']).stdout);
    expect(run.stdout).toContain('--drain');
  });
});

describe('--implementation', () => {
  it('says which fspl answered, while -V keeps the reference line', () => {
    const r = fspl(['--implementation']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(
      new RegExp(
        /^filespooler \d+\.\d+\.\d+\S*, the TypeScript fspl \(compatible with /.source +
          /Filespooler 1\.2\.2\), on Node v\d+\.\d+\.\d+: \S*bin\/fspl( -> \S+)?\n$/.source,
      ),
    );
    expect(fspl(['-V']).stdout).toBe('filespooler 1.2.2\n');
    expect(fspl(['--help']).stdout).toContain('`fspl --implementation` says its version');
  });
});
