/**
 * The fspl entry point: parse the command line (fast path first, yargs when needed), then import
 * and run the chosen subcommand's handler. Usage errors exit 2; runtime errors exit 1 with one
 * `Error: ...` line on stderr.
 */
import { fastParse } from './parse/fastparse.js';
import { scanGlobals } from './parse/globals.js';
import type { Invocation } from './parse/grammar.js';
import type { ParseResult } from './parse/parser.js';
import { reportError, writeOut } from './text/output.js';

const LIGHT = new Set(['gen-uuid', 'gen-filename', 'show-license']);

/** Exactly the reference's line: scripts check it. Our own version is in package.json. */
export const VERSION_LINE = 'filespooler 1.2.2\n';

/** Run the CLI; resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  const globals = scanGlobals(argv);
  if (globals.version) {
    writeOut(VERSION_LINE);
    return 0;
  }
  if (globals.implementation) {
    writeOut((await import('./commands/implementation.js')).implementationLine());
    return 0;
  }
  // `fspl net ...` (an extension): its subcommands, in the same grammar, through yargs (`net run`
  // on the fast path first).
  let netAt = 0;
  while (netAt < argv.length && argv[netAt]!.startsWith('-')) netAt += argv[netAt] === '-l' || argv[netAt] === '--log-level' ? 2 : 1;
  if (argv[netAt] === 'net') return net([...argv.slice(0, netAt), ...argv.slice(netAt + 1)]);
  let inv: Invocation | undefined = fastParse(argv);
  if (!inv) {
    const { parseFull } = await import('./parse/parser.js');
    const r = await parseFull(argv);
    if (r.kind === 'output') return print(r);
    inv = r.invocation;
  }
  try {
    // The trivial subcommands get a module of their own, so they load almost nothing.
    const { run } = LIGHT.has(inv.command) ? await import('./commands/standalone-commands.js') : await import('./commands/commands.js');
    return await run(inv);
  } catch (err) {
    return reportError(err);
  }
}

/** Help or a usage error, as the parser gave it. */
function print(r: Extract<ParseResult, { kind: 'output' }>): number {
  if (r.stream === 'stdout') writeOut(r.text);
  else process.stderr.write(r.text);
  return r.status;
}

/** `fspl net ...`, given the arguments after `net` (and the globals before it). */
async function net(argv: string[]): Promise<number> {
  const fast = (await import('./parse/net-fastparse.js')).fastParseNet(argv);
  if (fast) return (await import('./commands/net.js')).runNet(fast);
  const { parseNet } = await import('./parse/parser.js');
  let r: ParseResult;
  try {
    r = await parseNet(argv);
  } catch (err) {
    return reportError(err); // yargs failing by itself, not a usage error
  }
  if (r.kind === 'output') return print(r);
  const { runNet } = await import('./commands/net.js');
  return runNet(r.invocation);
}
