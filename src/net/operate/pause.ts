/**
 * Paused transitions: `net pause` / `net resume`. A pause is a file in the net's state directory,
 * STATE/paused/NAME.json (who, when, why), so it survives restarts and is seen by a running
 * runner, which looks at the directory at least every PAUSE_LOOK_MS and starts no new firing of
 * a paused transition; firings under way finish, or with `kill` are abandoned as on a stop (their
 * tokens stay). Tokens wait upstream meanwhile.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NetRequestError } from '../../base/errors.js';
import { fsyncDir, mkdirDurable } from '../../sys/durable.js';
import { unlinkQuietly } from '../../sys/io.js';
import { writeFresh } from '../../sys/untrusted.js';
import { hostView } from '../model/hosts.js';
import type { NetModel } from '../model/model.js';
import { transitionNamed } from '../model/names.js';

/** How often a runner looks for pauses and resumes (ms): within a second, as promised. */
export const PAUSE_LOOK_MS = 500;

/** One paused transition. */
export interface PauseRecord {
  transition: string;
  /** When it was paused (ms since the epoch). */
  since: number;
  /** Who paused it (the user name). */
  by: string;
  reason: string;
  /** Its running firings were stopped too (`--kill`), not let finish. */
  kill: boolean;
}

/** "paused since T by USER: reason", as status, leftovers and the web page say it. */
export function pauseText(rec: PauseRecord): string {
  return `paused since ${new Date(rec.since).toISOString()} by ${rec.by}${rec.reason ? `: ${rec.reason}` : ''}`;
}

function pausesDir(stateDir: string): string {
  return path.join(stateDir, 'paused');
}

function fileOf(stateDir: string, transition: string): string {
  return path.join(pausesDir(stateDir), `${encodeURIComponent(transition)}.json`);
}

/** The paused transitions, read from the state directory. */
export function readPauses(stateDir: string): Map<string, PauseRecord> {
  const out = new Map<string, PauseRecord>();
  let names: string[];
  try {
    names = fs.readdirSync(pausesDir(stateDir));
  } catch {
    return out;
  }
  for (const n of names) {
    if (!n.endsWith('.json')) continue;
    try {
      const r = JSON.parse(fs.readFileSync(path.join(pausesDir(stateDir), n), 'utf8')) as Partial<PauseRecord>;
      const transition = decodeURIComponent(n.slice(0, -'.json'.length));
      out.set(transition, {
        transition,
        since: Number(r.since ?? 0),
        by: String(r.by ?? ''),
        reason: String(r.reason ?? ''),
        kill: r.kill === true,
      });
    } catch {
      // being replaced, or not ours: not a pause
    }
  }
  return out;
}

/** The transition, or a one-line refusal: unknown, or run by another host than this one. */
function transitionOf(net: NetModel, name: string, host: string | undefined): void {
  const t = transitionNamed(net, name);
  if (t.host !== undefined && host !== undefined && t.host !== host) {
    throw new NetRequestError(
      `Transition ${name} runs on host ${t.host}, not ${host}: pause it there ` +
        `(fspl net pause NET ${name} --host ${t.host})`,
    );
  }
  if (t.host !== undefined && host === undefined)
    throw new NetRequestError(`Transition ${name} runs on host ${t.host}: pause it there, with --host ${t.host}`);
}

/** The state directory of the host that runs the transition (the net's own on a net of one host). */
function stateDirOf(net: NetModel, host: string | undefined): string {
  return host === undefined ? net.stateDir : hostView(net, host).stateDir;
}

/** Pause a transition (again: the record is replaced). Durable before it returns. */
export function pauseTransition(
  model: NetModel,
  name: string,
  options: { reason?: string; by?: string; host?: string; kill?: boolean } = {},
): PauseRecord {
  transitionOf(model, name, options.host);
  const stateDir = stateDirOf(model, options.host);
  const rec: PauseRecord = {
    transition: name,
    since: Date.now(),
    by: options.by ?? userName(),
    reason: options.reason ?? '',
    kill: !!options.kill,
  };
  const dir = pausesDir(stateDir);
  mkdirDurable(dir);
  const file = fileOf(stateDir, name);
  const temp = `${file}.${process.pid}.tmp`;
  writeFresh(temp, `${JSON.stringify(rec)}\n`, 0o644, { fsync: true }); // its bytes are durable before its name...
  fs.renameSync(temp, file);
  fsyncDir(dir); // ...and its name: a power cut does not undo a pause the operator was told about
  return rec;
}

/** Resume a paused transition; returns the pause it ends, or undefined when it was not paused. */
export function resumeTransition(
  model: NetModel,
  name: string,
  options: { host?: string } = {},
): PauseRecord | undefined {
  transitionOf(model, name, options.host);
  const stateDir = stateDirOf(model, options.host);
  const rec = readPauses(stateDir).get(name);
  if (!rec) return undefined;
  unlinkQuietly(fileOf(stateDir, name));
  fsyncDir(pausesDir(stateDir)); // the removal is durable: a power cut does not pause it again
  return rec;
}

function userName(): string {
  try {
    return os.userInfo().username;
  } catch {
    return String(process.getuid?.() ?? '?');
  }
}

/** What a runner knows of the pauses: read at most every PAUSE_LOOK_MS, and a poke when they change. */
export class Pauses {
  private known = new Map<string, PauseRecord>();
  private signature = '';

  constructor(private readonly stateDir: string) {
    this.look();
  }

  /** The paused transitions' names, as last looked at. */
  names(): ReadonlySet<string> {
    return new Set(this.known.keys());
  }

  get current(): ReadonlyMap<string, PauseRecord> {
    return this.known;
  }

  /** Read the directory again; true when something changed. */
  look(): boolean {
    const now = readPauses(this.stateDir);
    const sig = JSON.stringify([...now.values()].sort((a, b) => (a.transition < b.transition ? -1 : 1)));
    if (sig === this.signature) return false;
    this.signature = sig;
    this.known = now;
    return true;
  }

  /** Look every PAUSE_LOOK_MS, calling onChange when pauses come or go; returns the stop. */
  watch(onChange: () => void): () => void {
    const timer = setInterval(() => {
      if (this.look()) onChange();
    }, PAUSE_LOOK_MS);
    timer.unref();
    return () => clearInterval(timer);
  }
}
