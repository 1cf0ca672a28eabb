/**
 * Whether execve(2) would take a command's arguments and environment, checked before the start:
 * a job's own variables and parameters (FSPL_SET_*, FSPL_PARAM_*) come from its header, and may
 * be more than the system passes to a program. Linux refuses (E2BIG) any one string longer than
 * MAX_ARG_STRLEN (128 KiB, its NUL included) and all of them together, with a pointer each,
 * beyond a quarter of the stack size limit (2 MiB by default; at least 128 KiB, at most 6 MiB).
 * The check names what is too large, which E2BIG does not; elsewhere than on Linux it checks
 * nothing, and E2BIG from the start says TOO_LARGE.
 */
import fs from 'node:fs';
import { isPackable, type SpawnEnv } from './native-spawn.js';

/** Linux's MAX_ARG_STRLEN: the longest string execve takes, its NUL included (32 pages of 4 KiB). */
export const MAX_ARG_STRLEN = 131072;

/** What E2BIG means, when the check did not say it first. */
export const TOO_LARGE =
  `its arguments and environment are more than the ` +
  `system passes to a program (over its limit of ` +
  `${MAX_ARG_STRLEN} bytes for one string, or for them all)`;

/** Room kept for the program's path, as execvp(3) finds it in PATH (PATH_MAX), which execve copies too. */
const PATH_ROOM = 4096;

let argMax: number | null | undefined;

/** Linux's limit on arguments and environment together, from the stack's soft limit; null if unknown. */
function systemArgMax(): number | null {
  if (argMax !== undefined) return argMax;
  argMax = null;
  try {
    const m = /^Max stack size\s+(\S+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    const stack = m?.[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m?.[1]);
    if (stack > 0) argMax = Math.max(MAX_ARG_STRLEN, Math.min(6 * 1024 * 1024, Math.floor(stack / 4)));
  } catch {
    /* no /proc: E2BIG will say it */
  }
  return argMax;
}

/** The environment as execve takes it: NAME=value\0 each (a packable one packs itself, and keeps it for the start). */
function envText(env: SpawnEnv): string {
  if (isPackable(env)) {
    const packed = env.packed();
    if (packed !== undefined) return packed;
    env = env.record();
  }
  let out = '';
  for (const k in env) {
    const v = env[k];
    if (v !== undefined) out += `${k}=${v}\0`;
  }
  return out;
}

/**
 * Why execve would refuse these arguments and environment, in words naming the string that is
 * too long ("its environment variable FSPL_SET_X is 150000 bytes, ..."), or all of them
 * together; undefined when it takes them (or off Linux).
 */
export function execSizeProblem(command: string, args: readonly string[], env: SpawnEnv): string | undefined {
  if (process.platform !== 'linux') return undefined;
  const text = envText(env);
  let chars = command.length;
  for (const a of args) chars += a.length;
  // At most three bytes per UTF-16 unit, and per string a NUL and an 8-byte pointer (a variable
  // takes 3 units at least: NAME=\0): the usual case ends here.
  if (chars * 3 + text.length * 6 + (args.length + 1) * 9 + PATH_ROOM < MAX_ARG_STRLEN) return undefined;
  let total = PATH_ROOM + Buffer.byteLength(command) + 1 + 8;
  for (let i = 0; i < args.length; i++) {
    const n = Buffer.byteLength(args[i]!) + 1;
    if (n > MAX_ARG_STRLEN)
      return `its argument ${i + 1} is ${n} bytes, over the system's ${MAX_ARG_STRLEN}-byte limit for one argument`;
    total += n + 8;
  }
  for (let at = 0; at < text.length; ) {
    const end = text.indexOf('\0', at);
    const v = text.slice(at, end);
    at = end + 1;
    const n = Buffer.byteLength(v) + 1;
    if (n > MAX_ARG_STRLEN) {
      const name = v.slice(0, Math.max(0, Math.min(v.indexOf('='), 100)));
      return (
        `its environment variable ${name} is ${n} bytes, over the system's ${MAX_ARG_STRLEN}-byte ` +
        `limit for one variable`
      );
    }
    total += n + 8;
  }
  const limit = systemArgMax();
  if (limit !== null && total > limit) {
    return (
      `its arguments and environment take ${total} bytes, over the system's ${limit}-byte ` +
      `limit for them all, a quarter of the stack size limit (ulimit -s)`
    );
  }
  return undefined;
}
