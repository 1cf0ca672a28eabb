/**
 * A short tool run to its end, its words kept: ssh running a look script (net/hosts/drain.ts),
 * nncp-exec and nncp-stat (send/nncp-send.ts). Started through exec.ts's spawnTalking.
 */
import { spawnTalking } from './exec.js';

/** How a tool run by runTool ended: its exit, its stdout, the tail of its stderr, or why it could not start. */
export interface ToolResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  /** The last 2 KiB of its stderr. */
  stderr: string;
  /** Set when it could not be started (ENOENT: not installed). */
  startError?: NodeJS.ErrnoException;
}

/**
 * Run a short tool to its end through spawnTalking (ssh running a look script, nncp-exec,
 * nncp-stat), its stdin fed by `feed` (or none), in `env` (default: ours), its stdout kept whole (these tools say
 * little) and the tail of its stderr for the message. Stopped with SIGTERM when `signal` aborts. Never rejects.
 */
export function runTool(
  command: string,
  args: readonly string[],
  opts: {
    signal?: AbortSignal;
    feed?: (stdin: NodeJS.WritableStream & { destroyed: boolean }) => Promise<void>;
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<ToolResult> {
  return new Promise((resolve) => {
    const child = spawnTalking(
      command,
      args,
      [opts.feed ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      undefined,
      false,
      opts.env,
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2048)));
    const onAbort = () => child.kill('SIGTERM');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let startError: NodeJS.ErrnoException | undefined;
    child.on('error', (e: NodeJS.ErrnoException) => (startError = e));
    child.on('close', (code, sig) => {
      opts.signal?.removeEventListener('abort', onAbort);
      resolve({ code, signal: sig, stdout, stderr, ...(startError ? { startError } : {}) });
    });
    if (opts.feed) {
      const stdin = child.stdin!;
      stdin.on('error', () => {}); // EPIPE when it fails early: its exit status says why
      void opts.feed(stdin).then(() => stdin.end());
    }
  });
}
