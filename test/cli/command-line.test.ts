/**
 * parse/command-line.ts and read.ts: every command line read once, by the grammar, into arguments, help or a usage
 * error.
 */
import { describe, expect, it } from 'vitest';
import { type CommandLine, parseCommandLine } from '../../src/cli/parse/command-line.js';
import { usageText } from '../../src/cli/text/output.js';

/** A usage error's first line, or the line's kind and what it holds. */
async function read(argv: string[]): Promise<CommandLine | string> {
  const line = await parseCommandLine(argv);
  return line.kind === 'usage' ? usageText(line.error).split('\n')[0]! : line;
}

async function args(argv: string[]) {
  const line = await parseCommandLine(argv);
  if (line.kind !== 'run')
    throw new Error(`${argv.join(' ')}: ${line.kind === 'usage' ? line.error.message : line.kind}`);
  return line.invocation;
}

describe('fspl subcommands', () => {
  it('reads ordinary command lines, filling defaults', async () => {
    expect(
      await args(['-l', 'debug', 'queue-process', '-q', 'q', '--on-error=delete', '-n5', 'cmd', '--', 'a', '-b']),
    ).toEqual({
      command: 'queue-process',
      args: {
        queuedir: ['q'],
        'on-error': 'delete',
        maxjobs: '5',
        command: 'cmd',
        'order-by': 'Sequence',
        'output-to': 'PassBoth',
      },
      params: ['a', '-b'],
      logLevel: 'debug',
    });
    expect(await args(['prepare', '-s', '-', '-i', '-'])).toEqual({
      command: 'prepare',
      args: { seqfile: '-', input: '-' },
      params: [],
      logLevel: 'info',
    });
    expect((await args(['queue-init', '--append-only', '--queuedir', 'q'])).args).toEqual({
      'append-only': true,
      queuedir: 'q',
    });
    // Without PARAMS, what follows -- is still positionals; a negative number is one too.
    expect((await args(['queue-set-next', '-q', 'q', '--', '5'])).args).toEqual({ queuedir: 'q', id: '5' });
    expect((await args(['queue-set-next', '-q', 'q', '-1'])).args).toEqual({ queuedir: 'q', id: '-1' });
    // A string option takes the next argument, whatever it is: -q --json is the queue `--json`.
    expect((await args(['queue-ls', '-q', '--json'])).args).toEqual({ queuedir: '--json' });
    // queue-process serves many queues: -q and --queues-in repeat, each value kept in order.
    expect(
      (await args(['queue-process', '-q', 'a', '-qb', '--queues-in', 'p1', '--queues-in=p2', '--jobs', '4', 'cmd']))
        .args,
    ).toMatchObject({
      queuedir: ['a', 'b'],
      'queues-in': ['p1', 'p2'],
      jobs: '4',
    });
    expect((await args(['-ldebug', 'gen-uuid'])).logLevel).toBe('debug');
    expect((await args(['--log-level=warn', 'gen-uuid'])).logLevel).toBe('warn');
  });

  it('says the first usage error as the reference does, pointing to --help', async () => {
    const cases: Array<[string[], string]> = [
      [['queue-ls'], 'error: missing -q DIR: the queue directory'],
      [['queue-ls', '-q'], "error: the option '-q' needs a value: -q DIR"],
      [['queue-ls', '-q', 'a', '-q', 'b'], "error: the option '--queuedir' was given more than once"],
      [['queue-ls', '-q', 'a', 'extra'], "error: unexpected argument 'extra'"],
      [['queue-ls', '-q', 'a', '--', 'x'], "error: unexpected argument 'x'"],
      [['queue-ls', '--queudir', 'a'], "error: unknown option '--queudir' for queue-ls; did you mean '--queuedir'?"],
      [
        ['queue-ls', '-q', 'a', '-l', 'debug'],
        "error: unknown option '-l' for queue-ls: the log level " +
          'goes before the subcommand (fspl -l LEVEL queue-ls ...)',
      ],
      [['queue-init', '--append-only=yes', '-q', 'q'], "error: the option '--append-only' takes no value"],
      [['queue-lss'], "error: unknown subcommand 'queue-lss'; did you mean 'queue-ls'?"],
      [
        ['-x', 'gen-uuid'],
        "error: unknown option '-x' (before the subcommand, fspl takes -l LEVEL, -V, -h and --implementation)",
      ],
      [['-l'], 'error: the option -l needs a value: -l LEVEL'],
      [['-l', 'debug', '-l', 'info', 'gen-uuid'], "error: the option '--log-level' was given more than once"],
      [['help', 'queue-lss'], "error: unknown subcommand 'queue-lss'; did you mean 'queue-ls'?"],
      [['help', 'net', 'rn'], "error: unknown net command 'rn'; did you mean 'run'?"],
    ];
    for (const [argv, first] of cases) expect(await read(argv), argv.join(' ')).toBe(first);
  });

  it('gives help as a topic: fspl alone as an error, -h and --help, fspl help', async () => {
    expect(await read([])).toEqual({ kind: 'help', topic: { net: false }, asError: true });
    for (const argv of [['--help'], ['-h'], ['help'], ['help', 'help'], ['-h', '-V']])
      expect(await read(argv)).toEqual({ kind: 'help', topic: { net: false, command: undefined } });
    for (const argv of [
      ['queue-ls', '--help'],
      ['queue-ls', '-h', '--bogus'],
      ['-h', 'queue-ls'],
      ['help', 'queue-ls'],
    ])
      expect(await read(argv), argv.join(' ')).toEqual({ kind: 'help', topic: { net: false, command: 'queue-ls' } });
    // An error before the help is said first.
    expect(await read(['queue-ls', '--bogus', '--help'])).toBe("error: unknown option '--bogus' for queue-ls");
    expect(await read(['-V', '--help'])).toEqual({ kind: 'version' });
    expect(await read(['--implementation'])).toEqual({ kind: 'implementation' });
  });
});

describe('fspl net', () => {
  it('reads net commands by the same rules: options anywhere, the log level too, --no-FLAG', async () => {
    expect(
      await args(['-l', 'debug', 'net', 'run', 'n.yaml', '-w3', '--grace=2', '--poll-interval', '0.5', '--host', 'h1']),
    ).toEqual({
      command: 'run',
      args: { net: 'n.yaml', workers: '3', grace: '2', 'poll-interval': '0.5', host: 'h1', progress: true },
      params: [],
      logLevel: 'debug',
    });
    expect(await args(['net', 'run', '--no-progress', 'n.yaml', '-l', 'warn'])).toMatchObject({
      args: { net: 'n.yaml', progress: false },
      logLevel: 'warn',
    });
    // Only `net put` takes PARAMS; elsewhere what follows -- is positionals.
    expect(await args(['net', 'put', 'n.yaml', 'in', '-k', 'a', '--', 'x', '-y'])).toMatchObject({
      args: { key: 'a' },
      params: ['x', '-y'],
    });
    expect((await args(['net', 'run', '--', 'n.yaml'])).args).toMatchObject({ net: 'n.yaml' });
    // A repeated option before its positionals takes one value, not them (yargs took them).
    expect((await args(['net', 'serve', '--allow-host', 'h1', 'n.yaml'])).args).toMatchObject({
      'allow-host': ['h1'],
      net: 'n.yaml',
    });
    expect((await args(['net', 'status', 'n.yaml', '--host', '--json'])).args).toEqual({
      net: 'n.yaml',
      host: '--json',
    });
  });

  it('says its usage errors pointing to fspl net --help', async () => {
    const cases: Array<[string[], string]> = [
      [
        ['net'],
        'error: give a net command: check, init, put, run, simulate, status, ' +
          'dot, serve, retry, pause, resume, ls, show, set-aside or receive',
      ],
      [['net', 'rn', 'x'], "error: unknown net command 'rn'; did you mean 'run'?"],
      [['net', 'run'], 'error: missing NET: the net file (YAML)'],
      [['net', 'run', 'a', 'b'], "error: unexpected argument 'b'"],
      [['net', 'run', 'n.yaml', '--', 'p'], "error: unexpected argument 'p'"],
      [['net', 'run', 'n.yaml', '--workers'], "error: the option '--workers' needs a value: -w VALUE"],
      [['net', 'run', 'n.yaml', '--drain', '--drain'], "error: the option '--drain' was given more than once"],
      [['net', 'run', 'n.yaml', '--progress=false'], "error: the option '--progress' takes no value"],
      [
        ['net', 'run', 'n.yaml', '--worker', '2'],
        "error: unknown option '--worker' for net run; did you mean '--workers'?",
      ],
    ];
    for (const [argv, first] of cases) expect(await read(argv), argv.join(' ')).toBe(first);
    const line = await parseCommandLine(['net', 'run']);
    expect(line.kind === 'usage' && usageText(line.error)).toMatch(/For more information try fspl net --help\n$/);
  });

  it('gives its help as a topic', async () => {
    for (const argv of [
      ['net', '--help'],
      ['net', 'help'],
      ['help', 'net'],
      ['--help', 'net'],
    ])
      expect(await read(argv), argv.join(' ')).toEqual({ kind: 'help', topic: { net: true, command: undefined } });
    for (const argv of [
      ['net', 'run', '--help'],
      ['net', 'help', 'run'],
      ['help', 'net', 'run'],
      ['net', 'run', '--bogus', '--help'],
    ])
      expect(await read(argv), argv.join(' ')).toEqual({ kind: 'help', topic: { net: true, command: 'run' } });
  });
});
