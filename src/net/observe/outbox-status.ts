/**
 * What `net status --host NAME` says about the places that cross hosts:
 * - per place on another host that this host writes, its outbox here: how many tokens wait to
 *   leave, where they go, and, while deliveries fail or once the sender stopped, since when and
 *   why (from the sender's STATE/outbox/PLACE/sender.json);
 * - per place of this host written from another host (by that host's outbox), which host feeds
 *   it: such a place is not a source, though nothing here writes it.
 */

import { readSenderState } from '../hosts/outbox-sender.js';
import { hostOf, hostView, type RemotePlace, remotePlaces } from '../model/hosts.js';
import { type NetModel, writersOf } from '../model/model.js';
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
export async function hostStatus(net: NetModel, host: string, view = hostView(net, host)): Promise<NetStatusReport> {
  const fed = new Set([...view.places.values()].filter((p) => hostOf(p) === host && feedersOf(net, p.name, host).length > 0).map((p) => p.name));
  return addHostDetails(await netStatus(view, { fedFromElsewhere: fed }), view, net, host);
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
    st.outbox = outboxStatus(view, name, r, st.tokens);
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
    st.fedBy = { host: feeders[0]!, via: spec.sync === true ? 'sync' : 'ssh' };
    const readHere = [...view.transitions.values()].some((t) => t.inputs.some((a) => a.place === st.name));
    st.role = errorPlaces.has(st.name) ? 'error' : readHere ? 'inbox' : 'sink';
    st.note = st.problem ?? describeFeed(st.fedBy);
  }
  return report;
}

function outboxStatus(view: NetModel, name: string, r: RemotePlace, tokens: number): OutboxStatus {
  const sender = r.sync ? undefined : readSenderState(view.places.get(name)!.dir);
  return { host: r.host, remoteDir: r.dir, via: r.sync ? 'sync' : 'ssh', waiting: tokens, sender };
}

export function describeFeed(f: FeedStatus): string {
  return `written by host ${f.host} (${f.via === 'sync' ? 'its outbox, through the sync tool' : 'outbox'})`;
}

/** One line for the NOTE column. */
export function describeOutbox(o: OutboxStatus, live: boolean, now = Date.now()): string {
  if (o.via === 'sync') return `outbox to ${o.host}:${o.remoteDir} (shared by the sync tool; ${o.empty ? 'nothing sent yet' : `${o.waiting} kept`})`;
  let s = `outbox to ${o.host}:${o.remoteDir}: ${o.waiting} waiting`;
  const stopped = o.sender?.stopped;
  const f = o.sender?.failing;
  if (stopped)
    s += live ? `; STOPPED: ${stopped.error} (the tokens stay here; restart net run once fixed)` : `; the last run stopped sending: ${stopped.error}`;
  else if (f && live) s += `; HOST UNREACHABLE for ${Math.round((now - f.since) / 1000)} s (${f.attempts} attempts): ${f.error}`;
  else if (o.sender?.lastSentAt) s += `; last sent ${Math.round((now - o.sender.lastSentAt) / 1000)} s ago`;
  else if (o.empty || !o.sender) s += '; nothing sent yet';
  return s;
}
