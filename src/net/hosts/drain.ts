/**
 * `net run --drain --host H` on a net across hosts: H exits once it has nothing to fire AND no
 * token can still come to it from another host. H looks at each upstream host over ssh (LOOK_SCRIPT:
 * its activity file, its places' counts, its outboxes towards H) twice in a row, and trusts only
 * two equal quiet looks: tokens move between hosts only through a busy run or a non-empty outbox.
 * docs/distributed.md ("Draining") says what is waited for and when it exits 3.
 */
import fs from 'node:fs';
import path from 'node:path';
import { shellQuote } from '../../send/receive-script.js';
import { runTool } from '../../sys/tool.js';
import { writeFresh } from '../../sys/untrusted.js';
import { hostConfig, hostOf, hostStateDir, outboxDir, type SshHostConfig } from '../model/hosts.js';
import type { NetModel } from '../model/model.js';
import type { RemoteLeftover } from '../run/leftovers.js';
import type { RunActivity } from '../run/options.js';

/** What is looked at on one upstream host. */
export interface UpstreamHost {
  host: string;
  config: SshHostConfig;
  /** Its activity file (the same path there as computed here: places and state share paths). */
  activity: string;
  /** Places on it, read by its transitions, from which tokens can reach this host. */
  places: Array<{ place: string; dir: string }>;
  /** Its outboxes (over ssh) towards places from which tokens can reach this host. */
  outboxes: Array<{ place: string; dir: string }>;
}

export interface DrainPlan {
  upstream: UpstreamHost[];
  /**
   * Upstream hosts reached through NNCP: nothing looks at them (NNCP may carry their tokens days
   * later, or never ask), so the drain does not wait for what they may still send.
   */
  unseen: string[];
  /** This host's own outboxes (over ssh) towards places from which tokens come back here. */
  ownOutboxes: string[];
}

/** The places from which a token can reach a place that `host` reads, and who writes them. */
export function drainPlan(net: NetModel, host: string): DrainPlan {
  const reach = new Set<string>();
  for (const t of net.transitions.values()) if (hostOf(t) === host) for (const a of t.inputs) reach.add(a.place);
  const writes = (t: { outputs: string[]; error?: string }) => [...t.outputs, ...(t.error ? [t.error] : [])];
  for (let grew = true; grew; ) {
    grew = false;
    for (const t of net.transitions.values()) {
      if (!writes(t).some((p) => reach.has(p))) continue;
      for (const a of t.inputs) {
        if (!reach.has(a.place)) {
          reach.add(a.place);
          grew = true;
        }
      }
    }
  }
  const byHost = new Map<string, UpstreamHost>();
  const ownOutboxes: string[] = [];
  const unseen: string[] = [];
  for (const t of net.transitions.values()) {
    const g = hostOf(t);
    const targets = writes(t).filter((p) => reach.has(p));
    if (g === undefined || targets.length === 0) continue;
    // Through an outbox (over ssh or NNCP): not a synced place.
    const viaSsh = targets.filter((p) => hostOf(net.places.get(p)!) !== g && net.places.get(p)!.sync !== true);
    if (g === host) {
      for (const p of viaSsh) if (!ownOutboxes.includes(p)) ownOutboxes.push(p);
      continue;
    }
    const config = hostConfig(net, g);
    if (config.kind !== 'ssh') {
      if (!unseen.includes(g)) unseen.push(g);
      continue;
    }
    let u = byHost.get(g);
    if (!u) {
      u = { host: g, config, activity: activityPath(hostStateDir(net, g)), places: [], outboxes: [] };
      byHost.set(g, u);
    }
    for (const a of t.inputs)
      if (!u.places.some((x) => x.place === a.place))
        u.places.push({ place: a.place, dir: net.places.get(a.place)!.dir });
    for (const p of viaSsh)
      if (!u.outboxes.some((x) => x.place === p))
        u.outboxes.push({ place: p, dir: outboxDir(hostStateDir(net, g), p) });
  }
  return { upstream: [...byHost.values()], ownOutboxes, unseen };
}

export function activityPath(stateDir: string): string {
  return path.join(stateDir, 'activity');
}

/** Job files in a queue directory, counted as the look script counts them. */
export function countJobs(dir: string): number {
  try {
    return fs.readdirSync(path.join(dir, 'jobs')).filter((n) => /^fspl-.*\.fspl$/.test(n)).length;
  } catch {
    return 0;
  }
}

/**
 * A host run's activity file: `PID STATE GEN [PLACE=TOKENS...]`, rewritten (write and rename)
 * only when it changes, each time with a new GEN, so that two equal reads mean no change between.
 */
export class ActivityFile implements RunActivity {
  private gen = 0;
  private last = '';
  private counted = '';
  private readonly runId = `${process.pid}-${Date.now().toString(36)}`;

  constructor(
    private readonly file: string,
    /** The places this host's transitions read, whose tokens it counts when it turns idle. */
    private readonly readPlaces: Array<{ place: string; dir: string }>,
  ) {}

  beforeIdleCheck(): void {
    this.counted = this.readPlaces.map((p) => `${p.place}=${countJobs(p.dir)}`).join(' ');
  }

  idle(): void {
    this.write(`idle ${this.counted}`);
  }

  busy(): void {
    this.write('busy');
  }

  /** The run is over (written only by a run that got as far as its lock: the file is its own). */
  ended(): void {
    if (this.gen > 0) this.write('ended');
  }

  private write(what: string): void {
    if (what === this.last) return;
    const [state, ...counts] = what.split(' ');
    const line = [process.pid, state, `${this.runId}.${this.gen + 1}`, ...counts.filter(Boolean)].join(' ');
    try {
      // Not fsynced, on purpose: the file says what a live run is doing, and a power cut ends that
      // run. What a cut may leave (an older line, or none) names a pid that no longer runs, which
      // readers take as "no run" (they wait while such a host holds tokens); the next run's
      // busy() rewrites it. No token or number depends on it.
      writeFresh(`${this.file}.tmp`, `${line}\n`, 0o666);
      fs.renameSync(`${this.file}.tmp`, this.file);
      this.last = what;
      this.gen++;
    } catch {
      // The state directory is gone: the run will say so on its own; tried again on the next change.
    }
  }
}

/**
 * Run on the upstream host: $1 its activity file, then the directories to count. Prints
 * `activity [STATE GEN COUNTS...]`, `alive` when the run's process exists, and `count I N` per
 * directory. No single quote may appear in it (it travels inside one).
 */
export const LOOK_SCRIPT = `
m=$1; shift
if [ -f "$m" ] && read -r pid rest <"$m"; then
  echo "activity $rest"
  if [ -d "/proc/$pid" ]; then echo alive; fi
else
  echo activity
fi
i=0
for p in "$@"; do
  n=$(ls "$p/jobs" 2>/dev/null | grep -c "^fspl-.*[.]fspl$")
  echo "count $i $n"
  i=$((i + 1))
done
`;

/** One look at an upstream host. */
export interface Look {
  /** The activity line without its pid ("" when there is none). */
  activity: string;
  state?: 'busy' | 'idle' | 'ended';
  /** For an idle run: tokens per read place when it judged itself idle. */
  idleCounts: Map<string, number>;
  alive: boolean;
  /** Tokens now, per place of UpstreamHost.places. */
  places: number[];
  /** Tokens now, per outbox of UpstreamHost.outboxes. */
  outboxes: number[];
}

export async function look(u: UpstreamHost, signal?: AbortSignal): Promise<{ look?: Look; error?: string }> {
  const dirs = [...u.places.map((p) => p.dir), ...u.outboxes.map((o) => o.dir)];
  const [cmd, ...args] = u.config.ssh;
  const remote = `sh -c ${shellQuote(LOOK_SCRIPT)} fspl-look ${[u.activity, ...dirs].map(shellQuote).join(' ')}`;
  const r = await runTool(cmd!, [...args, remote], { signal });
  if (r.startError) return { error: `cannot run ${cmd}: ${r.startError.message}` };
  if (signal?.aborted) return { error: `cannot run ${cmd}: The operation was aborted` };
  const err = r.stderr;
  if (r.code !== 0)
    return {
      error: `${cmd} exited with status ${r.code}${err.trim() ? `: ${err.trim().split('\n').slice(-1)[0]}` : ''}`,
    };
  return { look: parseLook(u, r.stdout) };
}

/** The look script's output (LOOK_SCRIPT) as a Look of `u`. */
function parseLook(u: UpstreamHost, out: string): Look {
  const l: Look = {
    activity: '',
    idleCounts: new Map(),
    alive: false,
    places: u.places.map(() => 0),
    outboxes: u.outboxes.map(() => 0),
  };
  for (const line of out.split('\n')) {
    const words = line.trim().split(/\s+/);
    if (words[0] === 'activity') {
      l.activity = words.slice(1).join(' ');
      const state = words[1];
      if (state === 'busy' || state === 'idle' || state === 'ended') l.state = state;
      for (const w of words.slice(3)) {
        const m = /^([A-Za-z][A-Za-z0-9_]*)=(\d+)$/.exec(w);
        if (m) l.idleCounts.set(m[1]!, Number(m[2]));
      }
    } else if (words[0] === 'alive') l.alive = true;
    else if (words[0] === 'count' && words.length === 3) {
      const i = Number(words[1]);
      const n = Number(words[2]);
      if (i < u.places.length) l.places[i] = n;
      else if (i - u.places.length < u.outboxes.length) l.outboxes[i - u.places.length] = n;
    }
  }
  return l;
}

/** What one upstream host means for this drain. */
export type Verdict =
  | { kind: 'quiet' }
  /** Its run ended during this drain, leaving tokens that can't come now. */
  | { kind: 'left'; tokens: Array<{ place: string; where: 'place' | 'outbox'; count: number }> }
  | { kind: 'wait'; why: string };

/**
 * Judge one upstream host from two looks in a row (`first` is its look when this drain started,
 * to tell a run that ended since from one that never started).
 */
export function judge(u: UpstreamHost, a: Look, b: Look, first: Look): Verdict {
  const same =
    a.activity === b.activity &&
    a.alive === b.alive &&
    a.places.join() === b.places.join() &&
    a.outboxes.join() === b.outboxes.join();
  if (!same) return { kind: 'wait', why: `host ${u.host} is moving tokens` };
  const outboxed = u.outboxes
    .map((o, i) => ({ place: o.place, where: 'outbox' as const, count: b.outboxes[i]! }))
    .filter((x) => x.count > 0);
  const held = u.places
    .map((p, i) => ({ place: p.place, where: 'place' as const, count: b.places[i]! }))
    .filter((x) => x.count > 0);
  const running = b.alive && b.state !== 'ended';
  if (running) {
    if (b.state !== 'idle') return { kind: 'wait', why: `host ${u.host} is firing` };
    const arrived = u.places.find((p, i) => b.places[i]! !== (b.idleCounts.get(p.place) ?? 0));
    if (arrived)
      return { kind: 'wait', why: `tokens came or went in ${arrived.place} on host ${u.host} since its run went idle` };
    if (outboxed.length) return { kind: 'wait', why: `host ${u.host} has ${describe(outboxed)} to send` };
    return { kind: 'quiet' };
  }
  // No run there: whatever is there stays until one runs.
  const left = [...outboxed, ...held];
  if (left.length === 0) return { kind: 'quiet' };
  const ranSince = first.alive || first.activity !== b.activity;
  if (ranSince) return { kind: 'left', tokens: left };
  return { kind: 'wait', why: `no net run on host ${u.host}, which holds ${describe(left)}` };
}

/** `3 tokens in its outbox for P`, `1 token in P`. */
function tokensWhere(x: { place: string; where: 'place' | 'outbox'; count: number }): string {
  const where = x.where === 'outbox' ? `in its outbox for ${x.place}` : `in ${x.place}`;
  return `${x.count} token${x.count === 1 ? '' : 's'} ${where}`;
}

function describe(xs: Array<{ place: string; where: 'place' | 'outbox'; count: number }>): string {
  return xs.map(tokensWhere).join(', ');
}

/** One line of `net run --drain`'s report. */
export function describeRemoteLeftover(x: RemoteLeftover): string {
  return `host ${x.host}: ${tokensWhere(x)}: its run ended without sending them here`;
}
