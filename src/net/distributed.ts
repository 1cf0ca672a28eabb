/**
 * `net run --host NAME`: the runner on the host's view of the net (hosts.ts), plus one sender per
 * outbox of a place reached over ssh (outbox.ts). The runner never waits for a remote host: a
 * commit into a remote place is a local commit into its outbox, so every other transition keeps
 * going while a host is down; the outbox grows meanwhile and drains once the host is back.
 */
import path from 'node:path';
import type { Leftover } from './leftovers.js';
import type { NetModel } from './model.js';
import { hostConfig, hostView, remotePlaces } from './hosts.js';
import { OutboxSender } from './outbox.js';
import { NetRunner, type NetRunOptions, type NetRunSummary } from './runner.js';
import { checkRunAs } from './permissions.js';
import { Queue } from '../queue.js';

export interface HostRunOptions extends NetRunOptions {
  /** The host this run is (required when the net names hosts). */
  host?: string;
}

export async function runHost(net: NetModel, options: HostRunOptions): Promise<NetRunSummary> {
  const view = hostView(net, options.host);
  checkRunAs(view);
  const runner = new NetRunner(view, options);
  const remotes = [...remotePlaces(view)].filter(([, r]) => !r.sync);
  if (remotes.length === 0) return runner.run();
  const running = runner.run(); // opens the places (outboxes included) before its first await
  const stop = new AbortController();
  const senders = remotes.map(
    ([place, remote]) =>
      new OutboxSender({ place, outbox: view.places.get(place)!.dir, remote, host: hostConfig(net, remote.host), logger: options.logger, pollInterval: options.pollInterval }),
  );
  const sending = senders.map((s) => s.run(stop.signal));
  let summary: NetRunSummary;
  try {
    summary = await running;
  } finally {
    stop.abort();
    const results = await Promise.allSettled(sending);
    for (const r of results) if (r.status === 'rejected') options.logger?.error('net', (r.reason as Error).message);
  }
  if (!options.drain) return summary;
  // Drain: what waits in the outboxes goes now, or is reported.
  const leftovers: Leftover[] = [...summary.leftovers];
  for (const s of senders) {
    const signal = options.signal ?? new AbortController().signal;
    await s.run(signal, { untilEmpty: true });
    const [place, remote] = remotes[senders.indexOf(s)]!;
    const left = await new Queue(view.places.get(place)!.dir).scan();
    for (const e of left.sort((a, b) => (a.header.seq < b.header.seq ? -1 : 1))) {
      leftovers.push({ place, seq: e.header.seq, key: path.basename(e.filename), reason: `waits in the outbox for host ${remote.host}${s.failing ? ` (${s.failing.error})` : ''}` } as Leftover);
    }
  }
  return { ...summary, leftovers };
}
