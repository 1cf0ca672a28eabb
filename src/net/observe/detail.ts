/**
 * What `net serve` shows on a click: a place's tokens in order, and a transition's recent firings
 * with its last failure and the end of that failure's log.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openExisting } from '../../sys/untrusted.js';
import { effectiveOrder, type NetModel } from '../model/model.js';
import { RETRIED_VAR, retriedCount } from '../operate/error-tokens.js';
import { readErrorVars } from '../place/error-vars.js';
import { Place } from '../place/place.js';
import { type LiveState, readLiveState } from '../run/live.js';
import type { LastFailure } from '../run/monitor.js';
import { timeSince } from '../run/stats.js';

/** One token of a place, as `net serve` lists it. */
export interface TokenInfo {
  seq: bigint;
  key: string;
  /** Age by its file's time, ms. */
  ageMs?: number;
  nop: boolean;
  /** Params as text (invalid UTF-8 replaced). */
  params: string[];
  filename: string;
  /** RETRIED: how often `net retry` put it back (0 when never). */
  retried: number;
  /** For an error token: the transition it failed in, and why. */
  error?: { transition: string; reason: string };
}

/** The first `limit` tokens of a place in its order, and how many it holds (none when it can't be read). */
export async function placeTokens(
  net: NetModel,
  name: string,
  options: { limit?: number; now?: number } = {},
): Promise<{ total: number; tokens: TokenInfo[]; problem?: string }> {
  const spec = net.places.get(name);
  if (!spec) throw new RangeError(`no place named ${name}`);
  const now = options.now ?? Date.now();
  const p = new Place(spec, effectiveOrder(net, name));
  // Only the first `limit` are listed: only they are indexed.
  p.window = Math.max(1, options.limit ?? 200);
  if (!p.exists()) return { total: 0, tokens: [], problem: `no queue at ${spec.dir}` };
  try {
    await p.refresh(now);
  } catch (err) {
    return { total: 0, tokens: [], problem: (err as Error).message };
  }
  const all = [...p.tokens.values()].sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
  const tokens = all.slice(0, options.limit ?? 200).map((t) => {
    let ageMs: number | undefined;
    try {
      ageMs = timeSince(now, fs.statSync(t.path).mtimeMs);
    } catch {
      // consumed meanwhile
    }
    const cmd = t.header.cmd;
    const vars = new Map(
      cmd.kind === 'Command' ? cmd.env.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()]) : [],
    );
    const failed = readErrorVars((name) => vars.get(name));
    return {
      seq: t.seq,
      key: t.key,
      ageMs,
      nop: cmd.kind === 'NOP',
      params: cmd.kind === 'Command' ? cmd.params.map((x) => Buffer.from(x).toString('utf8')) : [],
      filename: t.filename,
      retried: retriedCount(vars.get(RETRIED_VAR)),
      error: failed && { transition: failed.transition, reason: failed.reason },
    };
  });
  return { total: p.count, tokens };
}

/** A transition's recent firings and its last failure, with the end of that failure's kept log. */
export function transitionDetail(
  net: NetModel,
  name: string,
  options: { tailBytes?: number } = {},
): {
  history: LiveState['transitions'][string]['history'];
  lastFailure?: LastFailure;
  stopped?: { reason: string; log: string; at: number };
  /** The end of the last failure's stderr: from its log file when kept, else from the live state. */
  stderrTail?: string;
} {
  if (!net.transitions.has(name)) throw new RangeError(`no transition named ${name}`);
  const { state, running } = readLiveState(net.stateDir);
  const lt = state?.transitions[name];
  const lastFailure = lt?.lastFailure;
  let stderrTail = lastFailure?.stderrTail;
  const log = lastFailure?.log;
  // Only a log under STATE/logs is read: live.json names it, but it is not trusted to name any file.
  const logs = path.join(path.resolve(net.stateDir), 'logs') + path.sep;
  if (log && path.resolve(log).startsWith(logs)) {
    try {
      const fd = openExisting(log).fd; // a regular file, not through a link
      try {
        const size = fs.fstatSync(fd).size;
        const n = Math.min(size, options.tailBytes ?? 4096);
        const buf = Buffer.alloc(n);
        fs.readSync(fd, buf, 0, n, size - n);
        stderrTail = buf.toString('utf8');
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      // rotated away: the live state's tail will do
    }
  }
  return { history: lt?.history ?? [], lastFailure, stopped: running ? lt?.stopped : undefined, stderrTail };
}
