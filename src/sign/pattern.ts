/**
 * OpenSSH's patterns (match.c): `*` and `?` wildcards, and comma-separated lists of them in which
 * `!pattern` vetoes. Used for an allowed signer's principals and its namespaces="…" option.
 */

/**
 * Whether `s` matches one wildcard pattern; greedy with backtracking to the last `*`, so linear-ish, never exponential.
 */
export function matchPattern(s: string, pattern: string): boolean {
  let si = 0;
  let pi = 0;
  let star = -1;
  let mark = 0;
  while (si < s.length) {
    if (pi < pattern.length && (pattern[pi] === '?' || (pattern[pi] !== '*' && pattern[pi] === s[si]))) {
      si++;
      pi++;
    } else if (pi < pattern.length && pattern[pi] === '*') {
      star = pi++;
      mark = si;
    } else if (star >= 0) {
      pi = star + 1;
      si = ++mark;
    } else return false;
  }
  while (pi < pattern.length && pattern[pi] === '*') pi++;
  return pi === pattern.length;
}

/** match_pattern_list: 1 when a pattern matches, -1 when a negated one does (it wins), 0 when none does. */
export function matchPatternList(s: string, list: string): 1 | 0 | -1 {
  let positive = false;
  const items = list.split(',');
  // match.c stops at the end of the list: a trailing comma (or an empty list) adds no empty pattern.
  if (list === '' || list.endsWith(',')) items.pop();
  for (const item of items) {
    const negated = item.startsWith('!');
    if (!matchPattern(s, negated ? item.slice(1) : item)) continue;
    if (negated) return -1;
    positive = true;
  }
  return positive ? 1 : 0;
}
