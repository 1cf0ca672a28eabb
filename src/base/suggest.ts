/**
 * "Did you mean ...?" for a misspelt word: the closest allowed word by edit distance, when it is
 * close enough to be a typo rather than another word. A net file's keys and names use it, and so
 * do the command line's subcommands and options.
 */

/**
 * Levenshtein distance where swapping two neighbouring characters also counts as one edit
 * (optimal string alignment): `dri` is one typo away from `dir`, not two.
 */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate closest to `word`, if it is 1 or 2 edits away. Fewer for short words: at most
 * half the word's length, so that `x` suggests nothing rather than any one-letter name. Between
 * two as close, the one that starts like the word (`rn`: `run` rather than `in`).
 */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(2, Math.floor(word.length / 2));
  let best: { c: string; d: number; prefix: number } | undefined;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d === 0 || d > limit) continue;
    let prefix = 0;
    while (prefix < word.length && word[prefix] === c[prefix]) prefix++;
    if (!best || d < best.d || (d === best.d && prefix > best.prefix)) best = { c, d, prefix };
  }
  return best?.c;
}

/** `; did you mean "retries"?`, or nothing. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const c = closest(word, candidates);
  return c === undefined ? '' : `; did you mean ${JSON.stringify(c)}?`;
}
