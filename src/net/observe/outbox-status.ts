/**
 * What `net status --host NAME` says about the places that cross hosts:
 * - per place on another host that this host writes, its outbox here: how many tokens wait to
 *   leave, where they go, and, while deliveries fail or once the sender stopped, since when and
 *   why (from the sender's STATE/outbox/PLACE/sender.json);
 * - per place of this host written from another host (by that host's outbox), which host feeds
 *   it: such a place is not a source, though nothing here writes it.
 */

import path from 'node:path';
import { nncpSpool, type SpoolCount } from '../../send/nncp-send.js';
import { ReceivedLedger } from '../../send/received.js';
import { SeqFile } from '../../sys/seqfile.js';
import { readSenderState } from '../hosts/outbox-sender.js';
import { hostConfig, hostOf, hostView, type RemotePlace, remotePlaces } from '../model/hosts.js';
import { type NetModel, type PlaceSpec, writersOf } from '../model/model.js';
import { type FeedStatus, type NetStatusReport, netStatus, type OutboxStatus } from './status.js';

/** The hosts other than `host` that write a place. */
function feedersOf(net: NetModel, place: string, host: string): string[] {
  return [
    ...new Set(
      writersOf(net, place)
        .map(hostOf)
        .filter((h): h is string => h !== undefined && h !== host),
    ),
  ];
}

/**
 * `net status --host HOST` (and `net serve --net-host`): the status of host's view of `net` (its
 * places, its run, its outboxes), where tokens may still come into the places other hosts feed.
 */
export async function hostStatus(
  net: NetModel,
  host: string,
  view = hostView(net, host),
  spools = new NncpSpoolReader(),
): Promise<NetStatusReport> {
  const fed = new Set(
    [...view.places.values()]
      .filter((p) => hostOf(p) === host && feedersOf(net, p.name, host).length > 0)
      .map((p) => p.name),
  );
  const report = addHostDetails(await netStatus(view, { fedFromElsewhere: fed }), view, net, host);
  await addNncpSpools(report, net, spools);
  return report;
}

/**
 * Adds the outboxes of `view` (a host's view, hosts.ts) and the feeds of its places from other
 * hosts (from `net`, the whole net) to a status report of that view; sets each such place's role
 * and note. A stopped outbox makes a live report `stuck`: its tokens can't leave until the run is
 * restarted.
 */
export function addHostDetails(report: NetStatusReport, view: NetModel, net: NetModel, host: string): NetStatusReport {
  const errorPlaces = new Set([...net.transitions.values()].map((t) => t.error).filter((e): e is string => !!e));
  for (const [name, r] of remotePlaces(view)) {
    const st = report.places.find((p) => p.name === name);
    if (!st) continue;
    st.outbox = outboxStatus(view, name, r, st.tokens, net);
    st.role = 'outbox';
    if (!st.exists) {
      // The sender's queue is made by `net init --host` or by the first commit into it: missing,
      // it only means that nothing was sent yet.
      st.outbox.empty = true;
      st.problem = undefined;
    }
    st.note = describeOutbox(st.outbox, report.live, report.at);
    if (report.live && st.outbox.sender?.stopped) report.state = 'stuck';
  }
  for (const st of report.places) {
    const spec = net.places.get(st.name);
    if (!spec || hostOf(spec) !== host || st.outbox) continue;
    const feeders = feedersOf(net, st.name, host);
    if (feeders.length === 0) continue;
    // One writing host at most (hosts.ts checks it): the place's numbers have one owner.
    st.fedBy = feedOf(net, host, feeders[0]!, spec);
    const readHere = [...view.transitions.values()].some((t) => t.inputs.some((a) => a.place === st.name));
    st.role = errorPlaces.has(st.name) ? 'error' : readHere ? 'inbox' : 'sink';
    st.note = st.problem ?? describeFeed(st.fedBy);
  }
  return report;
}

/**
 * How a place of this host is fed from `host`. The host's kind says how it sends: a place is fed
 * through NNCP when this host is reached through NNCP (the feeder sends to this host's entry).
 */
function feedOf(net: NetModel, host: string, feeder: string, spec: PlaceSpec): FeedStatus {
  if (spec.sync === true) return { host: feeder, via: 'sync' };
  if (hostConfig(net, host).kind !== 'nncp') return { host: feeder, via: 'ssh' };
  const dir = spec.dir;
  let received: string;
  try {
    received = ReceivedLedger.read(dir).describe();
  } catch (err) {
    received = `unreadable: ${(err as Error).message}`;
  }
  return { host: feeder, via: 'nncp', received };
}

function outboxStatus(view: NetModel, name: string, r: RemotePlace, tokens: number, net: NetModel): OutboxStatus {
  if (r.sync) return { host: r.host, remoteDir: r.dir, via: 'sync', waiting: tokens };
  const dir = view.places.get(name)!.dir;
  const sender = readSenderState(dir);
  const config = hostConfig(net, r.host);
  if (config.kind === 'ssh') return { host: r.host, remoteDir: r.dir, via: 'ssh', waiting: tokens, sender };
  const next = SeqFile.peek(path.join(dir, 'nextseq')) ?? 1n; // the first number not yet handed on
  return {
    host: r.host,
    remoteDir: r.dir,
    via: 'nncp',
    waiting: tokens,
    sender,
    nncp: { node: config.nncp.node, handedThrough: next > 0n ? next - 1n : 0n },
  };
}

/**
 * Asks NNCP how many packets its spool here holds for a node (`nncp-stat`, a subprocess), at most
 * once per `maxAgeMs` per node: the web page refreshes its report several times a second.
 */
export class NncpSpoolReader {
  private readonly seen = new Map<string, { at: number; count: Promise<SpoolCount> }>();

  constructor(private readonly maxAgeMs = 0) {}

  read(way: { node: string; cfg?: string }): Promise<SpoolCount> {
    const key = `${way.cfg ?? ''}\0${way.node}`;
    const had = this.seen.get(key);
    if (had && Date.now() - had.at < this.maxAgeMs) return had.count;
    const count = nncpSpool(way);
    this.seen.set(key, { at: Date.now(), count });
    return count;
  }
}

/** Fill in, for each outbox emptied through NNCP, what NNCP's spool here still holds for its node. */
export async function addNncpSpools(report: NetStatusReport, net: NetModel, spools: NncpSpoolReader): Promise<void> {
  await Promise.all(
    report.places.map(async (p) => {
      const n = p.outbox?.nncp;
      if (!n) return;
      const config = hostConfig(net, p.outbox!.host);
      if (config.kind !== 'nncp') return;
      n.spool = await spools.read(config.nncp);
      p.note = describeOutbox(p.outbox!, report.live, report.at);
    }),
  );
}

export function describeFeed(f: FeedStatus): string {
  if (f.via === 'nncp') return `written by host ${f.host} (its outbox, through NNCP; received ${f.received ?? 'none'})`;
  return `written by host ${f.host} (${f.via === 'sync' ? 'its outbox, through the sync tool' : 'outbox'})`;
}

/** One line for the NOTE column. */
export function describeOutbox(o: OutboxStatus, live: boolean, now = Date.now()): string {
  if (o.via === 'sync')
    return (
      `outbox to ${o.host}:${o.remoteDir} (shared by the sync tool; ` +
      `${o.empty ? 'nothing sent yet' : `${o.waiting} kept`})`
    );
  let s = `outbox to ${o.host}:${o.remoteDir}: ${o.waiting} waiting`;
  if (o.nncp) {
    s =
      `outbox to ${o.host} through NNCP (node ${o.nncp.node}): ${o.waiting} ` +
      `waiting; handed to NNCP up to #${o.nncp.handedThrough}`;
    const spool = o.nncp.spool;
    if (spool)
      s +=
        'error' in spool
          ? ` (nncp-stat: ${spool.error})`
          : `, ${spool.packets} NNCP packet${spool.packets === 1 ? '' : 's'} for the node still in the spool here`;
  }
  const stopped = o.sender?.stopped;
  const f = o.sender?.failing;
  if (stopped)
    s += live
      ? `; STOPPED: ${stopped.error} (the tokens stay here; restart net run once fixed)`
      : `; the last run stopped sending: ${stopped.error}`;
  else if (f && live)
    s += `; HOST UNREACHABLE for ${Math.round((now - f.since) / 1000)} s (${f.attempts} attempts): ${f.error}`;
  else if (o.sender?.lastSentAt) s += `; last sent ${Math.round((now - o.sender.lastSentAt) / 1000)} s ago`;
  else if (o.empty || !o.sender) s += '; nothing sent yet';
  return s;
}
