/**
 * What `net status --host NAME` says about the outboxes of that host: per place on another host,
 * how many tokens wait to leave, where they go, and, while deliveries fail, since when and why
 * (from the sender's STATE/outbox/PLACE/sender.json).
 */
import { remotePlaces } from './hosts.js';
import type { NetModel } from './model/model.js';
import { readSenderState, type SenderState } from './outbox.js';
import type { NetStatusReport } from './status.js';

export interface OutboxStatus {
  host: string;
  /** The place's directory on its host. */
  remoteDir: string;
  /** ssh, or a synchronisation tool that shares the outbox's jobs/ (sync: true). */
  via: 'ssh' | 'sync';
  /** Tokens waiting to leave (the outbox's tokens). */
  waiting: number;
  /** The sender's last report (ssh only). */
  sender?: SenderState;
}

export function addOutboxes(report: NetStatusReport, view: NetModel): NetStatusReport {
  for (const [name, r] of remotePlaces(view)) {
    const st = report.places.find((p) => p.name === name);
    if (!st) continue;
    const sender = r.sync ? undefined : readSenderState(view.places.get(name)!.dir);
    st.outbox = { host: r.host, remoteDir: r.dir, via: r.sync ? 'sync' : 'ssh', waiting: st.tokens, sender };
    st.role = 'outbox';
  }
  return report;
}

/** One line for the NOTE column. */
export function describeOutbox(o: OutboxStatus, live: boolean, now = Date.now()): string {
  if (o.via === 'sync') return `outbox to ${o.host}:${o.remoteDir} (shared by the sync tool; ${o.waiting} kept)`;
  let s = `outbox to ${o.host}:${o.remoteDir}: ${o.waiting} waiting`;
  const f = o.sender?.failing;
  if (f && live) s += `; HOST UNREACHABLE for ${Math.round((now - f.since) / 1000)} s (${f.attempts} attempts): ${f.error}`;
  else if (o.sender?.lastSentAt) s += `; last sent ${Math.round((now - o.sender.lastSentAt) / 1000)} s ago`;
  return s;
}
