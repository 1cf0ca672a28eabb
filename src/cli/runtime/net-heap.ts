/**
 * How V8's heap grows in a long `fspl net run`. A run keeps little (the live heap after a full
 * collection stays small whatever the tokens waiting: the places' bounded indexes, the open
 * firings), but every firing makes short-lived objects (its record, its commit's promises and
 * buffers) that live across a group commit's file calls, long enough to be promoted to the old
 * generation. V8 lets the old generation grow to up to four times what survived the last full
 * collection before it collects again, so the peak RSS of a drain was mostly that garbage, many
 * times the live heap.
 *
 * The run sets V8's heap growing factor to 1.5 instead (--heap-growing-percent=50): full
 * collections come sooner, on a small heap (short, mostly off the main thread). This is
 * no limit: the heap still grows with what the run keeps (a big and-merge's index), by half of it
 * at each step, and nothing is ever refused. A user's own --heap-growing-percent (node's command
 * line or NODE_OPTIONS) is left alone.
 *
 * Set at run time (v8.setFlagsFromString): V8 reads this flag each time it sets the next limit.
 * The young generation's size is fixed when the heap is set up, so it can't be changed from here.
 */
import v8 from 'node:v8';

/** The old generation grows by this percentage of what survived the last full collection. */
export const NET_RUN_HEAP_GROWING_PERCENT = 50;

/** The V8 flag to set for a net run, or undefined when the user gave one (execArgv, NODE_OPTIONS). */
export function netRunHeapFlag(execArgv: readonly string[], nodeOptions: string | undefined): string | undefined {
  const given = (s: string) => /--heap[-_]growing[-_]percent/.test(s);
  if (execArgv.some(given) || (nodeOptions !== undefined && given(nodeOptions))) return undefined;
  return `--heap-growing-percent=${NET_RUN_HEAP_GROWING_PERCENT}`;
}

/** Make this process's heap grow as a long net run wants (see above). */
export function tuneHeapForNetRun(): void {
  const flag = netRunHeapFlag(process.execArgv, process.env.NODE_OPTIONS);
  if (flag !== undefined) v8.setFlagsFromString(flag);
}
