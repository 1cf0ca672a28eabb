/**
 * How V8's heap grows in a long `fspl net run`: a growing factor of 1.5 (--heap-growing-percent=50)
 * instead of up to 4, so that the short-lived garbage each firing promotes to the old generation is
 * collected on a small heap. No limit: the heap still grows with what the
 * run keeps. A user's own --heap-growing-percent is left alone. Set at run time: V8 reads the flag
 * each time it sets the next limit.
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
