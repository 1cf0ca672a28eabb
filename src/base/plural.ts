/** A count with its noun, singular for one: `1 packet`, `2 packets`, `0 batches` (`many` when adding s won't do). */
export function plural(n: number | bigint, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 || n === 1n ? one : many}`;
}
