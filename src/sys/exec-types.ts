/** What exec.ts's spawns take and give: a job's command (runCommand) and a firing's (runDetached). */
import type { Readable } from 'node:stream';
import type { ChainedStart, ChainLink } from './exec-chain.js';
import type { PackableEnv, SpawnEnv } from './native-spawn.js';

export type StdinSource = number | Readable | 'inherit' | 'ignore';

export interface RunOptions {
  command: string;
  args: string[];
  /** The complete environment for the child (an object, or jobenv.ts ChildEnv: packed once for the addon). */
  env: SpawnEnv;
  stdin: StdinSource;
  /** Where stdout and stderr go: our own (PassBoth) or a file descriptor (SaveBoth). */
  output: 'inherit' | number;
  /** Seconds before SIGKILL to the command's process group. */
  timeout?: number;
  /**
   * Aborted: the command is stopped as the timeout stops it (SIGKILL to its process group),
   * and the result says `stopped` unless it had succeeded by then.
   */
  stop?: AbortSignal;
  /** Told of the child's start and exit, so that its owner can chain the next job to it (exec-chain.ts). */
  link?: ChainLink;
  /** The child, started already by the addon at the exit of the job before (a chain fired): waited for, not started. */
  adopt?: ChainedStart;
}

export interface RunResult {
  ok: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Stopped (the `stop` signal) before it could succeed. */
  stopped: boolean;
  /** Whether a piped payload could not be delivered in full because the child stopped reading. */
  stdinClosedEarly: boolean;
}

export interface DetachedOptions {
  command: string;
  args: string[];
  /** The complete environment for the child (jobenv.ts ChildEnv: packed once for the addon). */
  env: Record<string, string> | PackableEnv;
  cwd?: string;
  /** Descriptors: stdin ('ignore': /dev/null), stdout and stderr. */
  stdin: number | 'ignore';
  stdout: number;
  stderr: number;
  /** Start it as this user and group (the caller is root). */
  runAs?: { uid: number; gid: number };
  /** Seconds before the group is killed (SIGTERM, then SIGKILL after killGraceMs). */
  timeout?: number;
  /** Aborted: the group is killed the same way, and the result says abandoned. */
  signal?: AbortSignal;
  killGraceMs: number;
}

export interface DetachedResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** 128 + the signal's number when it was killed; else its exit code. */
  status: number | null;
  timedOut: boolean;
  abandoned: boolean;
}
