/**
 * One firing: the inputs presented to the command, its outputs staged in files of its own
 * (invisible to every place), the command run, and the outcome judged. Nothing here touches a
 * place: committing is the runner's, through the journal. What the command sees (stdin, stdout,
 * FSPL_IN_*, FSPL_OUT_*, FSPL_BATCH_*): docs/nets.md. It runs in a process group of its own; a
 * timeout, or the run stopping, kills the group.
 */
import fs from 'node:fs';
import type { ChildEnv, EnvVariable } from '../../queue/jobenv.js';
import { runDetached, StartError } from '../../sys/exec.js';
import { closeQuietly } from '../../sys/io.js';
import { appendQuietly, createFresh, openExisting } from '../../sys/untrusted.js';
import type { TransitionSpec } from '../model/model.js';
import type { Token } from '../place/token.js';
import { runFunction } from './fire-function.js';
import { firingEnv } from './firing-env.js';
import { FiringInputs, type RefusedInput, type SignedInput } from './inputs.js';
import type { RunAs } from './permissions.js';
import {
  claimOutputs,
  judgeOutputs,
  makeStagingDir,
  type StagingFiles,
  stagingOf,
  tailOf,
  userFile,
  wasWritten,
} from './staging.js';

/**
 * A staged output's payload: a file the firing wrote, the payloads of input tokens as they are,
 * or the bytes a JavaScript transition returned (written straight into the token at commit).
 */
export type OutputSource = { path: string } | { tokens: string[] } | { data: Uint8Array };

/** How a firing that ran ended: a command, a function or a move. */
export interface RanOutcome {
  ok: boolean;
  /** Why it failed, in a few words ("exited with status 3", "wrote no output file"...). */
  reason?: string;
  /** Exit status, or 128 + signal number; undefined for a function or a start failure. */
  status?: number;
  /** Output payloads by place (those written). */
  outputs: Map<string, OutputSource>;
  /** The last bytes of stderr (or the function's error). */
  stderrTail: string;
  /** The stderr file (kept in the logs when the firing fails). */
  stderrPath: string;
  durationMs: number;
  /** The run stopped while it ran: neither a success nor a failure. */
  abandoned: boolean;
  /**
   * The staging files this firing made, when that is known (a command's, or a JavaScript
   * transition's that succeeded): the staging sweeper (staging.ts) removes those alone.
   * Undefined: any of them may be there.
   */
  made?: string[];
  /** A token of a signed place that its signature did not let in when the firing opened it (inputs.ts): nothing ran. */
  refused?: RefusedInput;
  /** A failure's signed inputs as they were checked, for its error tokens (instead of their names). */
  kept?: ReadonlyMap<Token, string>;
}

/** The firing of a NOP token: nothing runs; it commits (the NOP is consumed) in its turn. */
export interface NopOutcome {
  readonly nop: true;
}

/** What became of a firing once it finished. */
export type FiringOutcome = RanOutcome | NopOutcome;

export const STDERR_TAIL_BYTES = 2048;
const KILL_GRACE_MS = 2000;

export interface FiringRequest {
  transition: TransitionSpec;
  firing: string;
  key: string;
  /** Input tokens in arc order (a batch in sequence order). */
  tokens: Token[];
  /** Where this firing's files go (stagingOf): a prefix in the run's staging directory. */
  dir: string;
  signal: AbortSignal;
  /** Run the command as this user and group (the runner is root); the directory becomes theirs. */
  runAs?: RunAs;
  /** The signed places among the inputs' (undefined for the others): judged again as opened (inputs.ts). */
  signed?: (place: string) => SignedInput | undefined;
}

/** How a command or function ended, before its outputs are judged. */
interface Ran {
  ok: boolean;
  reason?: string;
  status?: number;
  abandoned: boolean;
  /** Said into the firing's stderr file. */
  message?: string;
  /** A function's returned bytes. */
  data?: Uint8Array;
  /** The staging files a command's runner made (undefined: not known, it stopped half-way). */
  made?: string[];
  /** The size of a command's stderr when it ended. */
  stderrBytes?: number;
  /** A move's payload from signed places, copied as it was checked (inputs.ts stageMove). */
  staged?: string;
}

/**
 * The staging files a firing made, when known: a command's (what the runner made for it, and the
 * output files it wrote itself), or those of a JavaScript transition that succeeded (its output
 * files). With a message, its stderr file too. Undefined: any of them may be there.
 */
function stagedBy(
  t: TransitionSpec,
  result: Ran,
  outputs: Map<string, OutputSource>,
  stderrPath: string,
): string[] | undefined {
  let made: string[] | undefined;
  if ((t.run || !t.fn) && result.made)
    made = [...result.made]; // a command's, or a move's staged copy
  else if (t.fn && result.ok) made = [];
  if (!made) return undefined;
  for (const src of outputs.values()) if ('path' in src && !made.includes(src.path)) made.push(src.path);
  if (result.message !== undefined && !made.includes(stderrPath)) made.push(stderrPath);
  return made;
}

/** Run a firing to its outcome. Never throws: a failure to start is a failed outcome. */
export async function fire(req: FiringRequest): Promise<RanOutcome> {
  const { transition: t, tokens } = req;
  const started = Date.now();
  const files = stagingOf(req.dir, req.runAs);
  const stderrPath = files.stderr;
  const single = t.outputs.length === 1 && t.outMode === 'all';
  // Where the command or function writes each output by name (FSPL_OUT_*, ctx.outputs).
  const outPaths: Record<string, string> = {};
  for (const o of t.outputs) outPaths[o] = files.written(o);
  let result: Ran;
  let inputs: FiringInputs | undefined;
  try {
    // The tokens of signed places opened and judged again first (inputs.ts): a forgery runs nothing.
    const opened = req.signed ? await FiringInputs.open(tokens, req.signed) : FiringInputs.UNSIGNED;
    if (!(opened instanceof FiringInputs)) return refusedOutcome(opened, stderrPath, started);
    inputs = opened;
    if (t.run && req.runAs) makeStagingDir(req.dir, files, single, req.runAs);
    if (t.fn) result = await runFunction(req, inputs, outPaths, single);
    else if (t.run) result = await runCommandFiring(req, inputs, outPaths, single, stderrPath);
    else result = moveOnly(req, inputs);
  } catch (err) {
    result = { ok: false, reason: (err as Error).message, abandoned: false, message: (err as Error).message };
  }
  // Not on a full disk: the message is the outcome's reason anyway (this function never throws).
  if (result.message !== undefined) appendQuietly(stderrPath, `${result.message}\n`);
  const outputs = new Map<string, OutputSource>();
  const moved = !t.fn && !t.run;
  for (const o of t.outputs) {
    if (moved) outputs.set(o, result.staged ? { path: result.staged } : { tokens: tokens.map((x) => x.path) });
    else if (result.data && single) outputs.set(o, { data: result.data });
    // A command's single output is its stdout: the file the runner opened for it is there.
    else if ((t.run && single && result.made) || wasWritten(files, o)) outputs.set(o, { path: files.out(o) });
  }
  const named = !moved && !(t.run && single) && !(result.data && single);
  const refused = named && result.ok ? claimOutputs(req.runAs, files, outputs) : undefined;
  if (refused) result = { ...result, ok: false, reason: refused, message: `fspl net: ${refused}` };
  const staged = stagedBy(t, result, outputs, stderrPath);
  if (result.ok && !result.abandoned) {
    const problem = judgeOutputs(t, outputs);
    if (problem) result = { ok: false, reason: problem, abandoned: false };
  }
  // Every path above comes here (the catch takes all): the inputs close in there.
  const { kept, made } = keepForErrorTokens(result, inputs, files, staged);
  return {
    ok: result.ok,
    reason: result.reason,
    status: result.status,
    outputs,
    // A function's stderr file exists only with its message; a command's that wrote none is empty.
    stderrTail:
      (t.run && result.stderrBytes !== 0) || result.message !== undefined ? tailOf(stderrPath, STDERR_TAIL_BYTES) : '',
    stderrPath,
    durationMs: Date.now() - started,
    abandoned: result.abandoned,
    made,
    kept,
  };
}

/**
 * A failure's error tokens copy its inputs at their commit (apply-outcome.ts toErrorPlace): signed ones
 * as checked, kept now (then the inputs close), not by their names, which their writers may have
 * changed since. A copy that fails leaves the names to read, and every staged name to sweep.
 */
function keepForErrorTokens(
  result: Ran,
  inputs: FiringInputs | undefined,
  files: StagingFiles,
  made: string[] | undefined,
): { kept?: ReadonlyMap<Token, string>; made: string[] | undefined } {
  if (!inputs) return { made };
  try {
    if (result.ok || result.abandoned || !inputs.anyChecked) return { made };
    const kept = inputs.keepCopies(files.kept);
    return { kept, made: made && [...made, ...kept.values()] };
  } catch {
    return { made: undefined };
  } finally {
    inputs.close();
  }
}

/** A firing that its input's signature stopped as it opened it: nothing ran, nothing staged. */
function refusedOutcome(refused: RefusedInput, stderrPath: string, started: number): RanOutcome {
  const reason = `token ${refused.token.filename} of place ${refused.token.place}: ${refused.why}`;
  return {
    ok: false,
    reason,
    outputs: new Map(),
    stderrTail: '',
    stderrPath,
    durationMs: Date.now() - started,
    abandoned: false,
    made: [],
    refused,
  };
}

/** The payload for stdin: the token's (a descriptor, borrowed from inputs if checked), or a batch's in a file. */
function stdinFor(
  req: FiringRequest,
  inputs: FiringInputs,
): { fd: number | 'ignore'; lengths?: number[]; borrowed?: boolean } {
  const { transition: t, tokens } = req;
  if (t.inputs.length > 1) return { fd: 'ignore' };
  // Its header, read to reach the payload, is the one the job's variables need (env below).
  if (tokens.length === 1 && t.inputs[0]!.take === 1) return inputs.stdin(tokens[0]!);
  const file = stagingOf(req.dir, req.runAs).batch;
  const out = createFresh(file, 0o600, userFile(req.runAs));
  let lengths: number[];
  try {
    lengths = inputs.copyTo(tokens, out);
  } finally {
    closeQuietly(out);
  }
  return { fd: openExisting(file).fd, lengths };
}

async function runCommandFiring(
  req: FiringRequest,
  inputs: FiringInputs,
  outPaths: Record<string, string>,
  single: boolean,
  stderrPath: string,
): Promise<Ran> {
  const { transition: t, tokens } = req;
  const files = stagingOf(req.dir, req.runAs);
  // What the runner makes in staging, for the sweeper to remove those alone (not known, should
  // this throw half-way: then every name goes).
  const made: string[] = [];
  // An and-merge's inputs, each in a file of its own (their headers, read on the way, kept for env).
  const extra: EnvVariable[] = [];
  if (t.inputs.length > 1) {
    for (const tok of tokens) {
      const file = files.in(tok.place);
      inputs.extract(tok, file, userFile(req.runAs));
      made.push(file);
      extra.push([`FSPL_IN_${tok.place}`, file]);
    }
  }
  if (!single) for (const [o, p] of Object.entries(outPaths)) extra.push([`FSPL_OUT_${o}`, p]);
  const owner = userFile(req.runAs);
  const stdin = stdinFor(req, inputs);
  let stdoutFd: number | undefined;
  let stderrFd: number | undefined;
  let stderrBytes: number | undefined;
  try {
    if (stdin.lengths) {
      made.push(files.batch);
      extra.push(
        ['FSPL_BATCH_LENGTHS', stdin.lengths.join(' ')],
        ['FSPL_BATCH_SEQS', tokens.map((x) => x.seq).join(' ')],
        ['FSPL_BATCH_KEYS', tokens.map((x) => x.key).join(' ')],
        ['FSPL_BATCH_SIZE', String(tokens.length)],
      );
    }
    const vars = firingEnv(tokens, t, req.firing, req.key, extra);
    const stdoutPath = single ? files.out(t.outputs[0]!) : files.stdout;
    stdoutFd = createFresh(stdoutPath, 0o644, owner);
    made.push(stdoutPath);
    stderrFd = createFresh(stderrPath, 0o644, owner);
    made.push(stderrPath);
    const ended = await runCommand(req, vars, stdin.fd, stdoutFd, stderrFd);
    // Its size, from the descriptor at hand: an empty stderr (the usual case) is not read again.
    stderrBytes = fs.fstatSync(stderrFd).size;
    return { ...ended, made, stderrBytes };
  } finally {
    if (typeof stdin.fd === 'number' && !stdin.borrowed) closeQuietly(stdin.fd);
    closeQuietly(stdoutFd);
    closeQuietly(stderrFd);
  }
}

async function runCommand(
  req: FiringRequest,
  env: ChildEnv,
  stdin: number | 'ignore',
  stdout: number,
  stderr: number,
): Promise<Ran> {
  const t = req.transition;
  const run = t.run!;
  const [command, args] =
    'argv' in run ? [run.argv[0]!, run.argv.slice(1)] : [process.env.SHELL || '/bin/sh', ['-c', run.shell]];
  try {
    const r = await runDetached({
      command,
      args,
      cwd: t.cwd,
      env,
      stdin,
      stdout,
      stderr,
      runAs: req.runAs,
      timeout: t.timeout,
      signal: req.signal,
      killGraceMs: KILL_GRACE_MS,
    });
    if (r.abandoned) return { ok: false, reason: 'abandoned', abandoned: true };
    if (r.timedOut) return { ok: false, reason: `timed out after ${t.timeout} s`, status: 128 + 9, abandoned: false };
    if (r.signal)
      return { ok: false, reason: `was killed by signal ${r.signal}`, status: r.status ?? undefined, abandoned: false };
    return r.code === 0
      ? { ok: true, status: 0, abandoned: false }
      : { ok: false, reason: `exited with status ${r.code}`, status: r.code ?? undefined, abandoned: false };
  } catch (err) {
    if (!(err instanceof StartError)) throw err;
    return {
      ok: false,
      reason: `could not start ${JSON.stringify(command)}: ${err.why}`,
      abandoned: false,
      message: `fspl net: cannot run ${JSON.stringify(command)}: ${err.why}`,
    };
  }
}

/**
 * No run: each output gets the input's payload (a merge's or a batch's, one after the other),
 * copied by the commit straight from the input tokens, still in their places then; signed ones'
 * checked bytes are staged here (inputs.ts), as their names may hold something else by then.
 */
function moveOnly(req: FiringRequest, inputs: FiringInputs): Ran {
  if (!inputs.anyChecked) return { ok: true, abandoned: false };
  const files = stagingOf(req.dir, req.runAs);
  if (req.runAs) makeStagingDir(req.dir, files, true, req.runAs);
  inputs.stageMove(req.tokens, files.batch);
  return { ok: true, abandoned: false, made: [files.batch], staged: files.batch };
}
