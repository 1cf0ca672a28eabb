/**
 * A command as a run's options give it: a program (`'md5sum'`), or the program and its first
 * arguments as a list (`['sh', '-c', 'cat']`, the form Queue.process takes), either way followed
 * by `params`. Checked once, as the run starts: a wrong one is a TypeError at the call, not a
 * spawn failure at every queue's first job.
 */
import type { PacketHeader } from '../packet/types.js';

export type CommandLine = string | readonly string[];

/** The program and the arguments that come before `params`; TypeError naming `what` for anything else. */
export function splitCommand(command: unknown, what: string): { program: string; lead: readonly string[] } {
  if (typeof command === 'string' && command.length > 0) return { program: command, lead: [] };
  if (
    Array.isArray(command) &&
    command.length > 0 &&
    command.every((w) => typeof w === 'string') &&
    command[0] !== ''
  ) {
    const [program, ...lead] = command as string[];
    return { program: program!, lead };
  }
  throw new TypeError(
    `${what}: command must be a program name or a non-empty list of strings ` +
      `(the program, then its arguments), got ${describe(command)}`,
  );
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return `a list of ${v.length} item${v.length === 1 ? '' : 's'}`;
  return v === '' ? 'an empty string' : typeof v;
}

/** The program and arguments of a command packet's job: the run's command, its parameters, and the job's with --allow-job-params. */
export function commandLine(
  cmd: Extract<PacketHeader['cmd'], { kind: 'Command' }>,
  opts: { command: CommandLine; params?: readonly string[]; allowJobParams?: boolean },
): { program: string; args: string[] } {
  const { program, lead } = splitCommand(opts.command, 'processQueue');
  const args = [...lead, ...(opts.params ?? [])];
  if (opts.allowJobParams) for (const p of cmd.params) args.push(Buffer.from(p).toString('utf8'));
  return { program, args };
}
