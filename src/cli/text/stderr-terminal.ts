/**
 * Whether stderr is a terminal, asked without making process.stderr (which loads net or tty) when it
 * cannot be: only a character device other than /dev/null can be one. A module of its own: the
 * commands that draw a status line when it is one load that line's code only then.
 */
import fs from 'node:fs';

export function stderrIsTerminal(): boolean {
  try {
    const st = fs.fstatSync(2);
    if (!st.isCharacterDevice() || st.rdev === fs.statSync('/dev/null').rdev) return false;
  } catch {
    return false;
  }
  return process.stderr.isTTY === true;
}
