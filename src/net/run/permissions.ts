/**
 * A user per transition (`user:` and `group:`), and the owners and modes of places that go with
 * it: the rule of pmjq's paper (sections 3 and 8), "a place is owned by its reader, and its
 * writers are in its group".
 *
 * With the runner, a command writes no place itself: its outputs go to its own staging directory
 * (STATE/staging/FIRING, made its user's, mode 0700) and the runner, as root, commits them; its
 * input comes on stdin (a descriptor the runner opened) or as files in that directory. So a
 * command running as its own user can write only its staging directory and whatever its user
 * may write anyway; the places' owners and modes (set by `net init --permissions`) keep it from
 * touching the others' queues: a place is `reader:writers` with mode 2770 (files in it keep the
 * group), its sequence files are readable by the group and the writers' sendseq writable by it.
 *
 * Users and groups are looked up with getent (so NSS users work too), once per run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { NetError } from '../../base/errors.js';
import { lookupSync } from '../../sys/exec.js';
import { inDir, OPEN_DIR, openExisting } from '../../sys/untrusted.js';
import type { NetWarning } from '../model/check.js';
import { type NetModel, readersOf, type TransitionSpec, writersOf } from '../model/model.js';

export interface RunAs {
  uid: number;
  gid: number;
  /** For messages: user[:group] as written. */
  label: string;
}

function getent(db: 'passwd' | 'group', key: string): string[] | undefined {
  const line = lookupSync('getent', [db, key])?.split('\n')[0];
  return line?.split(':');
}

const cache = new Map<string, RunAs | undefined>();

/** The uid/gid a transition's command runs as; undefined when it has no user: or group:. */
export function runAsOf(t: TransitionSpec): RunAs | undefined {
  const user = t.user;
  const group = t.group;
  if (user === undefined && group === undefined) return undefined;
  const id = `${user ?? ''}:${group ?? ''}`;
  if (cache.has(id)) return cache.get(id);
  let uid = process.getuid?.() ?? 0;
  let gid = process.getgid?.() ?? 0;
  if (user !== undefined) {
    const pw = getent('passwd', String(user));
    if (!pw) {
      if (typeof user !== 'number')
        throw new NetError(`Transition ${t.name}: no user ${JSON.stringify(user)} on this host`);
      uid = user;
    } else {
      uid = Number(pw[2]);
      gid = Number(pw[3]);
    }
  }
  if (group !== undefined) {
    const gr = getent('group', String(group));
    if (!gr) {
      if (typeof group !== 'number')
        throw new NetError(`Transition ${t.name}: no group ${JSON.stringify(group)} on this host`);
      gid = group;
    } else gid = Number(gr[2]);
  }
  const r = { uid, gid, label: group === undefined ? String(user) : `${user ?? ''}:${group}` };
  cache.set(id, r);
  return r;
}

/** Before a run: users can only be changed by root; every user and group must exist. */
export function checkRunAs(net: NetModel): void {
  const isRoot = process.getuid?.() === 0;
  for (const t of net.transitions.values()) {
    const r = runAsOf(t);
    if (r && t.fn)
      throw new NetError(
        `Transition ${t.name} has a user or group but is a JavaScript function: ` +
          `only commands (run) can run as another user`,
      );
    if (r && !isRoot && (r.uid !== process.getuid?.() || r.gid !== process.getgid?.())) {
      throw new NetError(
        `Transition ${t.name} runs as ${r.label}: fspl net run must run as root ` +
          `to run commands as other users (it runs as uid ${process.getuid?.()})`,
      );
    }
  }
}

/** Make a firing's staging directory its user's alone. */
export function giveDir(dir: string, r: RunAs | undefined): void {
  if (!r) return;
  fs.chownSync(dir, r.uid, r.gid);
  fs.chmodSync(dir, 0o700);
}

/** Who should own a place: its reader's user, its writers' group (undefined: nobody says). */
export function placeOwners(net: NetModel, place: string): { uid?: number; gid?: number; problems: string[] } {
  const problems: string[] = [];
  const readers = readersOf(net, place)
    .map((t) => runAsOf(t))
    .filter((r): r is RunAs => !!r);
  const writers = writersOf(net, place)
    .map((t) => runAsOf(t))
    .filter((r): r is RunAs => !!r);
  const uids = [...new Set(readers.map((r) => r.uid))];
  const gids = [...new Set(writers.map((r) => r.gid))];
  if (uids.length > 1)
    problems.push(
      `place ${place} is read by transitions of different users (uids ${uids.join(', ')}): a place has one owner`,
    );
  if (gids.length > 1)
    problems.push(
      `place ${place} is written by transitions of different groups (gids ${gids.join(', ')}): ` +
        `give its writers one group`,
    );
  return { uid: uids.length === 1 ? uids[0] : undefined, gid: gids.length === 1 ? gids[0] : undefined, problems };
}

const DIR_MODE = 0o2770;
/** nextseq: the reader's; the group may read it. sendseq: the writers'. */
const FILE_MODES: Record<string, number> = {
  nextseq: 0o640,
  'nextseq.lock': 0o640,
  sendseq: 0o660,
  'sendseq.lock': 0o660,
  recvseq: 0o640,
  'recv.lock': 0o640,
};

function usesUsers(net: NetModel): boolean {
  return [...net.transitions.values()].some((t) => t.user !== undefined || t.group !== undefined);
}

/** `net init --permissions`: owners and modes of these places by the rule. Returns what was done. */
export function applyPermissions(net: NetModel, places: string[]): string[] {
  if (process.getuid?.() !== 0) throw new NetError('--permissions changes owners: run fspl net init as root');
  const done: string[] = [];
  for (const name of places) {
    const spec = net.places.get(name)!;
    const { uid, gid, problems } = placeOwners(net, name);
    if (problems.length) throw new NetError(problems.join('; '));
    setOwners(spec.dir, { uid: uid ?? 0, gid: gid ?? 0 });
    done.push(`place ${name}: owner ${uid ?? 0}, group ${gid ?? 0}, mode 2770`);
  }
  return done;
}

/**
 * A place's directories and files given to their owners, by descriptor: the place may be its
 * reader's already (a second `net init --permissions`), who could have put links under any name
 * in it. Each is opened without following a link (the files in jobs/ through the descriptor of
 * jobs/, untrusted.ts inDir) and changed with fchown and fchmod; a link is left as it is.
 */
function setOwners(dir: string, who: { uid: number; gid: number }): void {
  const dirFd = fs.openSync(dir, OPEN_DIR);
  try {
    fs.fchownSync(dirFd, who.uid, who.gid);
    fs.fchmodSync(dirFd, DIR_MODE);
    for (const f of fs.readdirSync(inDir(dirFd, '.'))) {
      if (FILE_MODES[f] !== undefined) ownFile(inDir(dirFd, f), who, FILE_MODES[f]!);
    }
    const jobsFd = fs.openSync(inDir(dirFd, 'jobs'), OPEN_DIR);
    try {
      fs.fchownSync(jobsFd, who.uid, who.gid);
      fs.fchmodSync(jobsFd, DIR_MODE);
      for (const f of fs.readdirSync(inDir(jobsFd, '.'))) ownFile(inDir(jobsFd, f), who, 0o640);
    } finally {
      fs.closeSync(jobsFd);
    }
  } finally {
    fs.closeSync(dirFd);
  }
}

/**
 * One regular file's owner and mode, through its descriptor; a link, a FIFO, a device or a file
 * with another name (a hard link: maybe to a file of root's) is left alone.
 */
function ownFile(file: string, who: { uid: number; gid: number }, mode: number): void {
  let fd: number;
  try {
    fd = openExisting(file, fs.constants.O_RDONLY, { singleLink: true }).fd;
  } catch {
    return;
  }
  try {
    fs.fchownSync(fd, who.uid, who.gid);
    fs.fchmodSync(fd, mode);
  } finally {
    fs.closeSync(fd);
  }
}

/** `net check`: warnings where the places on disk break the rule (only for nets that name users). */
export function permissionWarnings(net: NetModel): NetWarning[] {
  if (!usesUsers(net)) return [];
  const out: NetWarning[] = [];
  for (const spec of net.places.values()) {
    let owners: ReturnType<typeof placeOwners>;
    try {
      owners = placeOwners(net, spec.name);
    } catch (err) {
      out.push({ kind: 'permissions', name: spec.name, message: (err as Error).message });
      continue;
    }
    for (const m of owners.problems) out.push({ kind: 'permissions', name: spec.name, message: m });
    for (const d of [spec.dir, path.join(spec.dir, 'jobs')]) {
      let st: fs.Stats;
      try {
        st = fs.statSync(d);
      } catch {
        continue; // not here (another host, or not initialised)
      }
      const bad: string[] = [];
      if (owners.uid !== undefined && st.uid !== owners.uid)
        bad.push(`owned by uid ${st.uid}, not its reader's (${owners.uid})`);
      if (owners.gid !== undefined && st.gid !== owners.gid)
        bad.push(`group ${st.gid}, not its writers' (${owners.gid})`);
      if (st.mode & 0o007)
        bad.push(`others may ${st.mode & 0o002 ? 'write' : 'read'} it (mode ${(st.mode & 0o7777).toString(8)})`);
      if (owners.gid !== undefined && (st.mode & 0o070) !== 0o070)
        bad.push(`its group can't write it (mode ${(st.mode & 0o7777).toString(8)})`);
      if (bad.length)
        out.push({
          kind: 'permissions',
          name: spec.name,
          message: `place ${spec.name}: ${d} is ${bad.join('; ')} (fspl net init --permissions sets them)`,
        });
    }
  }
  return out;
}
