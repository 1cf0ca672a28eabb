/**
 * The failure policy applied: what the run does with a finished firing once its turn to commit
 * has come. What becomes of it is decided in plan/decide-outcome.ts (`decide`, pure: a Verdict); here
 * are the effects: the commit or the drop, the retry, the error tokens, the kept log, the counts
 * and the events.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describeSystemError } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import { writeFresh } from '../../sys/untrusted.js';
import { backoffMs } from '../commit/io-faults.js';
import { errorVars, type FiringError } from '../place/error-vars.js';
import type { Place } from '../place/place.js';
import { KEY_VAR, type Token, type TokenContent } from '../place/token.js';
import { decide, type Failure, type Verdict } from '../plan/decide-outcome.js';
import type { OutputSource, RanOutcome } from './fire-transition.js';
import type { RefusedInput } from './inputs.js';
import type { NetEvent } from './options.js';
import type { Firing, TransitionRun } from './state.js';

const HISTORY = 20;

/** What the policy needs of the run. */
export interface OutcomeContext {
  readonly log: Logger;
  /** Where failed firings' stderr is kept. */
  readonly logsDir: string;
  /** Firings committed and failed for good, over the run. */
  readonly totals: { fired: number; failed: number };
  stopping(): boolean;
  transition(name: string): TransitionRun;
  place(name: string): Place;
  firings(): Iterable<Firing>;
  /**
   * Commit the firing's outputs and consume its tokens through the journal (commit.ts), in a
   * group: `then` runs once it has committed. Refused (a bounded place full), the firing is
   * resolved again later.
   */
  commit(
    f: Firing,
    outputs: Array<{ place: string; content: TokenContent }>,
    then: (committed: Array<{ place: string; seq: bigint }>) => void,
  ): void;
  /** Forget a firing: its staging goes (unless removeDir is false), its tokens are free again. */
  drop(f: Firing, removeDir?: boolean): void;
  /** Remove the staging files of f's attempt (those in `made` when known), off the event loop. */
  unstage(f: Firing, made: string[] | undefined): void;
  /** Launch the firing again after this many ms (unless the run stops meanwhile); it holds its worker meanwhile. */
  retryAfter(f: Firing, ms: number): void;
  emit(e: NetEvent): void;
  /** Report a full disk or an I/O error of the state's (the staging files'). */
  fault(err: NodeJS.ErrnoException): void;
  /** Set aside a token its signature did not let in as its firing opened it (refuse.ts). */
  refuse(r: RefusedInput): void;
}

/** Resolve a finished firing: decide, then apply; true when it is gone from the set or on its way to commit. */
export function resolve(ctx: OutcomeContext, f: Firing): boolean {
  const ended = f.outcome!;
  const verdict = decide({
    ended,
    vanished: f.tokens.find((t) => !fs.existsSync(t.path)),
    refused: 'nop' in ended ? undefined : ended.refused,
    voided: f.voided,
    stopping: ctx.stopping(),
    stagingFull: f.stagingFull,
    attempt: f.attempt,
    retries: f.transition.retries,
    errorPlace: f.transition.error,
  });
  return apply(ctx, f, verdict);
}

/** Carry a verdict out: the commit, the drop or the retry, with the logs, counts and events that go with it. */
function apply(
  ctx: OutcomeContext,
  f: Firing,
  verdict: Verdict<Token, RanOutcome, NodeJS.ErrnoException, RefusedInput>,
): boolean {
  const run = ctx.transition(f.transition.name);
  switch (verdict.kind) {
    case 'vanished':
      // A token removed or replaced from outside meanwhile (a synced folder): the firing is void.
      ctx.log.warn(
        'net',
        `${f.transition.name}: token ${verdict.token.filename} of place ${verdict.token.place} ` +
          `vanished while it fired; its firing is dropped`,
      );
      ctx.place(verdict.token.place).markDirty();
      ctx.drop(f);
      return true;
    case 'refused':
      // Replaced under its name since its scan judged it (inputs.ts): set aside before the drop
      // gives the firing's other tokens back (the refused one, forgotten, is not given back).
      ctx.refuse(verdict.refusal);
      voidLater(ctx, f, verdict.refusal.token);
      ctx.drop(f);
      return true;
    case 'nop':
      ctx.commit(f, [], () => ctx.drop(f, false));
      return true;
    case 'drop':
      ctx.drop(f);
      return true;
    case 'commit':
      return succeed(ctx, run, f, verdict.ran);
    case 'wait-for-room':
      return waitForRoom(ctx, f, verdict.ran, verdict.err);
    default:
      return fail(ctx, run, f, verdict);
  }
}

/**
 * A refused token of a sequence place took no number: the place still waits for the real one.
 * Firings already started on later numbers of it (more than one worker) must not commit, which
 * would move its nextseq past that number: they are voided, dropped in their turn (their tokens
 * go back, and fire again once the real token has come). None of them is committing yet: the
 * refused token's firing, lower, held them back (firing-tally.ts mayCommit).
 */
function voidLater(ctx: OutcomeContext, f: Firing, tok: Token): void {
  if (ctx.place(tok.place).order !== 'sequence') return;
  let n = 0;
  for (const g of ctx.firings()) {
    if (g === f || g.voided || !g.tokens.some((t) => t.place === tok.place && t.seq > tok.seq)) continue;
    g.voided = true;
    n++;
  }
  if (n > 0)
    ctx.log.warn(
      'net',
      `${f.transition.name}: ${n} firing(s) on later tokens of place ${tok.place} ` +
        `are dropped: number ${tok.seq} is still to come`,
    );
}

/**
 * A command that failed while the disk of its staging files was full most likely could not write
 * its output: the disk's failure, not the command's. It runs again after a backoff, and the
 * attempt does not count against its retries (nor does it make an error token).
 */
function waitForRoom(ctx: OutcomeContext, f: Firing, o: RanOutcome, err: NodeJS.ErrnoException): boolean {
  ctx.fault(err);
  f.diskWaits = (f.diskWaits ?? 0) + 1;
  const ms = backoffMs(f.diskWaits);
  ctx.log.warn(
    'net',
    `${f.transition.name}: firing on key ${f.key} ${o.reason ?? 'failed'} ` +
      `while the disk of the staging files is full (${describeSystemError(err)}); ` +
      `it runs again in ${ms} ms`,
  );
  f.outcome = undefined;
  ctx.unstage(f, o.made); // the next attempt stages under names of its own
  f.attempt--; // launch counts it again: this one was the disk's
  ctx.retryAfter(f, ms);
  return false;
}

function succeed(ctx: OutcomeContext, run: TransitionRun, f: Firing, o: RanOutcome): boolean {
  const outputs = [...o.outputs].map(([place, src]) => ({ place, content: content(f, src) }));
  ctx.commit(f, outputs, (committed) => {
    run.fired++;
    ctx.totals.fired++;
    run.lastFired = Date.now();
    run.monitor.fired(run.lastFired, o.durationMs);
    remember(run, f, o);
    ctx.emit({
      type: 'commit',
      firing: f.id,
      transition: f.transition.name,
      key: f.key,
      inputs: f.tokens.map((t) => ({ place: t.place, seq: t.seq })),
      outputs: committed,
      ms: o.durationMs,
    });
    ctx.drop(f);
  });
  return true;
}

/** A failure: retried while attempts remain, else error tokens, else the transition stops. */
function fail(ctx: OutcomeContext, run: TransitionRun, f: Firing, verdict: Failure<RanOutcome>): boolean {
  const o = verdict.ran;
  const willRetry = verdict.kind === 'retry';
  run.monitor.failed(Date.now(), { key: f.key, reason: o.reason ?? 'failed', stderrTail: o.stderrTail });
  ctx.emit({
    type: 'fail',
    firing: f.id,
    transition: f.transition.name,
    key: f.key,
    reason: o.reason ?? 'failed',
    attempt: f.attempt,
    willRetry,
  });
  ctx.log.warn(
    'net',
    `${f.transition.name}: firing on key ${f.key} ${o.reason}` +
      (willRetry ? `; retrying (${f.attempt}/${f.transition.retries})` : ''),
  );
  if (verdict.kind === 'retry') {
    run.retried++;
    f.outcome = undefined;
    ctx.unstage(f, o.made); // the next attempt stages under names of its own
    ctx.retryAfter(f, verdict.delayMs);
    return false;
  }
  run.failed++;
  ctx.totals.failed++;
  remember(run, f, o);
  const log = keepLog(ctx, f, o);
  if (run.monitor.lastFailure) run.monitor.lastFailure.log = log;
  if (verdict.kind === 'error-tokens') return toErrorPlace(ctx, f, o, verdict.place, log);
  // No error place: the token stays, and this transition stops; the others go on.
  run.stopped = { reason: `${o.reason ?? 'failed'} (key ${f.key})`, log, at: Date.now() };
  ctx.log.error(
    'net',
    `${f.transition.name} stopped: firing on key ${f.key} ` +
      `${o.reason}; its stderr is in ${log}. The token ` +
      `stays in its place; restart the run to try again.`,
  );
  ctx.emit({ type: 'stopped', transition: f.transition.name, reason: run.stopped.reason, log });
  ctx.drop(f);
  // Firings of this transition after it give their tokens back.
  for (const g of [...ctx.firings()]) if (g.transition === f.transition && !g.running) ctx.drop(g);
  return true;
}

/** One error token per input token, carrying why the firing failed. */
function toErrorPlace(ctx: OutcomeContext, f: Firing, o: RanOutcome, errorPlace: string, log: string): boolean {
  const error: FiringError = {
    transition: f.transition.name,
    reason: o.reason ?? 'failed',
    status: o.status,
    stderrTail: o.stderrTail,
    log,
  };
  const outputs = f.tokens.map((tok) => ({
    place: errorPlace,
    // ERROR_PLACE: where `net retry` puts it back (each input of an and-merge to its own place).
    content: {
      env: inherited([tok], tok.key, errorVars(error, tok.place)),
      params: tok.header.cmd.kind === 'Command' ? tok.header.cmd.params : [],
      payload: errorPayload(o, tok),
    } satisfies TokenContent,
  }));
  ctx.commit(f, outputs, () => {
    ctx.emit({ type: 'error-token', firing: f.id, transition: f.transition.name, key: f.key, place: errorPlace, log });
    ctx.drop(f);
  });
  return true;
}

/**
 * An error token's payload: a signed input as its firing checked it (fire-transition.ts keepForErrorTokens), else the
 * input token's by name.
 */
function errorPayload(o: RanOutcome, tok: Token): TokenContent['payload'] {
  const kept = o.kept?.get(tok);
  return kept !== undefined ? { path: kept } : { tokens: [tok.path] };
}

function remember(run: TransitionRun, f: Firing, o: RanOutcome): void {
  run.history.push({ firing: f.id, key: f.key, at: Date.now(), ms: o.durationMs, ok: o.ok, reason: o.reason });
  if (run.history.length > HISTORY) run.history.shift();
}

function content(f: Firing, src: OutputSource): TokenContent {
  return { env: inherited(f.tokens, f.key), payload: src };
}

/** The variables an output token carries: the inputs' FSPL_SET_* (first input first), KEY set. */
function inherited(tokens: Token[], key: string, extra: Array<[string, string]> = []): Array<[Uint8Array, Uint8Array]> {
  const out = new Map<string, Uint8Array>();
  for (const tok of tokens) {
    if (tok.header.cmd.kind !== 'Command') continue;
    for (const [k, v] of tok.header.cmd.env) {
      const name = Buffer.from(k).toString();
      if (!out.has(name)) out.set(name, v);
    }
  }
  out.set(KEY_VAR, Buffer.from(key));
  for (const [k, v] of extra) out.set(k, Buffer.from(v));
  return [...out].map(([k, v]) => [Buffer.from(k), v]);
}

/** Keep a failed firing's stderr in the logs; returns the log's path. */
function keepLog(ctx: OutcomeContext, f: Firing, o: RanOutcome): string {
  const dir = path.join(ctx.logsDir, f.transition.name);
  fs.mkdirSync(dir, { recursive: true });
  const log = path.join(
    dir,
    `${new Date().toISOString().replace(/[:.]/g, '-')}-${f.key.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64)}` +
      `-${f.id.slice(0, 8)}.stderr`,
  );
  try {
    if (o.stderrPath && fs.existsSync(o.stderrPath)) fs.copyFileSync(o.stderrPath, log, fs.constants.COPYFILE_EXCL);
    else writeFresh(log, `${o.reason ?? ''}\n`, 0o666);
  } catch (err) {
    ctx.log.warn('net', `Cannot keep the log of a failed firing: ${(err as Error).message}`);
  }
  return log;
}
