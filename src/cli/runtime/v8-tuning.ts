/**
 * V8 flags for the CLI's long runs, set at run time (V8 reads both each time it uses them). Not in
 * the library: a process that imports fspl keeps the flags its owner gave it. A flag the user gave
 * (node's command line, NODE_OPTIONS) is left alone.
 *
 * - The interrupt budget: how much bytecode a function runs before V8 thinks of compiling it with
 *   TurboFan. With V8's default, a run over many queues or places had TurboFan compile hundreds of
 *   functions on its threads, some twice, for code that then ran only a few hundred times: a large
 *   share of the run's CPU. With a larger budget only what stays hot is compiled
 *   (docs/benchmarks-notes.md, "TurboFan's interrupt budget").
 * - The heap's growing factor, for a net run: 1.5 (--heap-growing-percent=50) instead of up to 4, so
 *   that the short-lived garbage each firing promotes to the old generation is collected on a small
 *   heap. No limit: the heap still grows with what the run keeps.
 *
 * V8 refuses a code cache made under other flags: a file of the bundle first loaded after these are
 * set is compiled from its source (bin/fspl). node:v8 loads node:stream, a cost at every start:
 * callers import this file only when a run is long.
 */
import v8 from 'node:v8';

/** The old generation grows by this percentage of what survived the last full collection. */
export const NET_RUN_HEAP_GROWING_PERCENT = 50;

/** Bytes of bytecode run before a function is looked at for TurboFan: V8's default is 66 KiB. */
export const LONG_RUN_INTERRUPT_BUDGET = 1 << 20;

/** The flags to set for a long run (a net run's with the heap's), without those the user gave (execArgv, NODE_OPTIONS); none with FSPL_V8_TUNING=0 (`tuning`). */
export function longRunFlags(
  kind: 'jobs' | 'net',
  execArgv: readonly string[],
  nodeOptions: string | undefined,
  tuning: string | undefined = undefined,
): string[] {
  if (tuning === '0') return [];
  const given = (name: RegExp) =>
    execArgv.some((a) => name.test(a)) || (nodeOptions !== undefined && name.test(nodeOptions));
  const flags: string[] = [];
  if (!given(/--interrupt[-_]budget(?![-_\w])/)) flags.push(`--interrupt-budget=${LONG_RUN_INTERRUPT_BUDGET}`);
  if (kind === 'net' && !given(/--heap[-_]growing[-_]percent/))
    flags.push(`--heap-growing-percent=${NET_RUN_HEAP_GROWING_PERCENT}`);
  return flags;
}

/**
 * Tune this process for a long run: many jobs of queue-process (`jobs`), or a net run (`net`).
 * FSPL_V8_TUNING=0 leaves V8's flags as they are: scripts/code-cache.mjs runs a net under it, so
 * that the cache it then writes is made under V8's own flags, which every command starts with.
 */
export function tuneForLongRun(kind: 'jobs' | 'net'): void {
  const { NODE_OPTIONS, FSPL_V8_TUNING } = process.env;
  for (const flag of longRunFlags(kind, process.execArgv, NODE_OPTIONS, FSPL_V8_TUNING)) v8.setFlagsFromString(flag);
}
