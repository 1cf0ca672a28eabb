/**
 * `fspl net run` parsed without yargs (fastparse.ts's parser over the net grammar): a module of
 * its own so that the fspl commands outside `net` do not load the net grammar (start-up,
 * docs/benchmarks-notes.md).
 */
import { fastParse } from './fastparse.js';
import type { Invocation } from './grammar.js';
import { NET_COMMANDS } from './net-spec.js';

/** The one net command parsed here: its start-up is part of every net run's time. */
const NET_FAST = new Map(NET_COMMANDS.filter((c) => c.name === 'run').map((c) => [c.name, c]));

/**
 * `fspl net run ...` (the arguments after `net`, globals before it kept) parsed as fastParse
 * does, without loading yargs, which is most of a net run's own start (docs/benchmarks-notes.md,
 * "Measurements behind the code": "Parsing `fspl net run` without yargs"). The invocation is the
 * one parseNet gives. Anything else: undefined, and yargs parses it.
 */
export function fastParseNet(argv: string[]): Invocation | undefined {
  const inv = fastParse(argv, NET_FAST);
  if (!inv || inv.params.length > 0) return undefined;
  return inv;
}
