/**
 * Gating for test parts with prerequisites (the reference implementation, root, a tmpfs...):
 * with everything present they run; in CI a missing prerequisite is a failing test that names
 * it; elsewhere the part is skipped with a loud warning.
 */
import { describe, expect, test } from 'vitest';

/** CI=true (or any value but 0/false): missing prerequisites fail instead of skipping. */
export const IN_CI = !!process.env.CI && !['0', 'false'].includes(process.env.CI.toLowerCase());

export interface Gate {
  /** What is being gated, for the messages ("compat suite", "reliability tests"). */
  what: string;
  /** An extra line for the skip warning. */
  note?: string;
}

export function describeIfPresent(name: string, missing: string[], gate: Gate, fn: () => void): void {
  if (missing.length === 0) {
    describe(name, fn);
    return;
  }
  if (IN_CI) {
    describe(name, () => {
      test('its prerequisites are present', () => {
        expect(missing, `${gate.what} cannot run in CI without: ${missing.join(', ')}`).toEqual([]);
      });
    });
    return;
  }
  console.warn(
    `\n!!! ${gate.what.toUpperCase()} SKIPPED (${name}): missing ${missing.join(', ')}.\n` +
      (gate.note ? `!!! ${gate.note}\n` : '') +
      '!!! Set CI=true to make this a failure.\n',
  );
  describe.skip(name, fn);
}
