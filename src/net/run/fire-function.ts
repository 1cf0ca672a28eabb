/**
 * A JavaScript transition's firing (`fn:`): the function called with its inputs, its outputs'
 * paths and a signal, and what it returned written into its single output.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setLongTimeout } from '../../base/timer.js';
import { CREATE_NEW } from '../../sys/untrusted.js';
import type { TransitionSpec } from '../model/model.js';
import type { Token } from '../place/token.js';
import type { FiringInputs } from './inputs.js';

/**
 * A JavaScript transition's returned value up to this size is kept in memory until its commit (no
 * staging file); a larger one goes to a staging file at once, so that firings waiting to commit
 * hold at most a few MiB.
 */
const KEEP_RETURNED_BYTES = 64 * 1024;

/** What a function's firing needs of its request (fire-transition.ts's FiringRequest). */
export interface FunctionFiring {
  transition: TransitionSpec;
  key: string;
  tokens: Token[];
  signal: AbortSignal;
}

/** How a function ended (fire-transition.ts's Ran). */
export interface FunctionRan {
  ok: boolean;
  reason?: string;
  abandoned: boolean;
  message?: string;
  /** Its returned bytes, kept for the commit. */
  data?: Uint8Array;
}

/** Run a transition's function to its end; never throws. */
export async function runFunction(
  req: FunctionFiring,
  opened: FiringInputs,
  outPaths: Record<string, string>,
  single: boolean,
): Promise<FunctionRan> {
  const { transition: t, tokens } = req;
  const { signal, cancel } = functionSignal(req);
  const inputs = tokens.map((tok) => opened.functionInput(tok));
  try {
    const value = await Promise.race([
      Promise.resolve(t.fn!({ transition: t.name, key: req.key, inputs, outputs: { ...outPaths }, signal })),
      new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
    ]);
    if (value !== undefined && value !== null) {
      if (!single)
        throw new Error('returned a value, but it has no single output place: write the files in ctx.outputs');
      const dest = outPaths[t.outputs[0]!]!;
      // Copied: the function may reuse its buffer once it has returned it.
      const bytes =
        typeof value === 'string' ? Buffer.from(value) : value instanceof Uint8Array ? Buffer.from(value) : undefined;
      if (bytes && bytes.length <= KEEP_RETURNED_BYTES) return { ok: true, abandoned: false, data: bytes };
      // On libuv's pool: creating a file waits on the file system's journal while groups commit.
      // A name of the runner's own staging, made new (CREATE_NEW) over what the function may have written there.
      await fs.promises.unlink(dest).catch(() => {});
      const handle = await fs.promises.open(dest, CREATE_NEW, 0o644);
      if (!bytes)
        await pipeline(value as Readable, handle.createWriteStream()); // which closes the handle
      else {
        try {
          await handle.writeFile(bytes);
        } finally {
          await handle.close();
        }
      }
    } else if (single && !fs.existsSync(outPaths[t.outputs[0]!]!)) {
      return { ok: true, abandoned: false, data: Buffer.alloc(0) }; // like a command that printed nothing
    }
    return { ok: true, abandoned: false };
  } catch (err) {
    if (req.signal.aborted) return { ok: false, reason: 'abandoned', abandoned: true };
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, reason: `failed: ${message}`, abandoned: false, message };
  } finally {
    cancel?.();
  }
}

/**
 * A function's signal: the firing's own (aborted when the run stops or its transition is paused
 * with --kill), not wrapped (that costs per move), or with a timeout, one that the timeout aborts too.
 */
function functionSignal(req: FunctionFiring): { signal: AbortSignal; cancel?: () => void } {
  const timeout = req.transition.timeout;
  if (timeout === undefined) return { signal: req.signal };
  const own = new AbortController();
  const onAbort = () => own.abort(req.signal.reason);
  req.signal.addEventListener('abort', onAbort, { once: true });
  const cancelTimer = setLongTimeout(() => own.abort(new Error(`timed out after ${timeout} s`)), timeout * 1000);
  return {
    signal: own.signal,
    cancel: () => {
      cancelTimer();
      req.signal.removeEventListener('abort', onAbort);
    },
  };
}
