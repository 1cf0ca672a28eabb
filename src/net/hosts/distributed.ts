/**
 * `net run --host NAME`: the runner on the host's view of the net (hosts.ts), plus one sender per
 * outbox of a place reached over ssh (outbox-sender.ts). The runner never waits for a remote host: a
 * commit into a remote place is a local commit into its outbox, so every other transition keeps
 * going while a host is down; the outbox grows meanwhile and drains once the host is back.
 *
 * The run also keeps STATE/NAME/activity up to date (drain.ts), by which the other hosts' drains
 * tell whether tokens may still come from here; with --drain, it waits while tokens may still
 * come to it from other hosts.
 */
import path from 'node:path';
import type { Logger } from '../../base/log.js';
import { Queue } from '../../queue/queue.js';
import { hostConfig, hostView, remotePlaces } from '../model/hosts.js';
import type { NetModel } from '../model/model.js';
import { type Leftover, leftover, type RemoteLeftover } from '../run/leftovers.js';
import type { NetRunOptions, NetRunSummary } from '../run/options.js';
import { checkRunAs } from '../run/permissions.js';
import { NetRunner } from '../run/runner.js';
import { ActivityFile, activityPath, countJobs, type DrainPlan, drainPlan, judge, type Look, look } from './drain.js';
import { OutboxSender } from './outbox-sender.js';

export interface HostRunOptions extends NetRunOptions {
  /** The host this run is (required when the net names hosts). */
  host?: string;
}

export async function runHost(net: NetModel, options: HostRunOptions): Promise<NetRunSummary> {
  const view = hostView(net, options.host);
  checkRunAs(view);
  if (options.host === undefined) return new NetRunner(view, options).run();
  const host = options.host;
  const readPlaces = [...new Set([...view.transitions.values()].flatMap((t) => t.inputs.map((a) => a.place)))].map(
    (place) => ({
      place,
      dir: view.places.get(place)!.dir,
    }),
  );
  const activity = new ActivityFile(activityPath(view.stateDir), readPlaces);
  const remotes = [...remotePlaces(view)].filter(([, r]) => !r.sync);
  const senders = new Map(
    remotes.map(([place, remote]) => [
      place,
      new OutboxSender({
        place,
        outbox: view.places.get(place)!.dir,
        remote,
        host: hostConfig(net, remote.host),
        logger: options.logger,
        pollInterval: options.pollInterval,
      }),
    ]),
  );
  const plan = options.drain ? drainPlan(net, host) : undefined;
  const elsewhere: RemoteLeftover[] = [];
  const drainGate =
    plan && (plan.upstream.length > 0 || plan.ownOutboxes.length > 0)
      ? gate(plan, view, senders, elsewhere, options.logger, options.signal)
      : undefined;
  const runner = new NetRunner(view, { ...options, activity, drainGate });
  try {
    const running = runner.run(); // opens the places (outboxes included) before its first await
    const stop = new AbortController();
    const sending = [...senders.values()].map((s) => s.run(stop.signal));
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
    for (const [place, s] of senders) {
      const signal = options.signal ?? new AbortController().signal;
      await s.run(signal, { untilEmpty: true });
      const remote = remotePlaces(view).get(place)!;
      const left = await new Queue(view.places.get(place)!.dir).scan();
      for (const e of left.sort((a, b) => (a.header.seq < b.header.seq ? -1 : 1))) {
        const why = s.stopped?.error ?? s.failing?.error;
        leftovers.push(
          leftover(
            { place, seq: e.header.seq, key: path.basename(e.filename), filename: e.filename },
            'in-outbox',
            `waits in the outbox for host ${remote.host}${why ? ` (${why})` : ''}`,
          ),
        );
      }
    }
    return { ...summary, leftovers, ...(elsewhere.length ? { elsewhere } : {}) };
  } finally {
    activity.ended();
  }
}

/**
 * The drain's last word (drain.ts): true once no token can still come here from another host.
 * Fills `elsewhere` with the tokens of hosts whose run ended holding some for this one.
 */
function gate(
  plan: DrainPlan,
  view: NetModel,
  senders: Map<string, OutboxSender>,
  elsewhere: RemoteLeftover[],
  log: Logger | undefined,
  signal: AbortSignal | undefined,
): () => Promise<boolean> {
  // How each upstream host was when this drain started: a run that ends later has had its chance.
  const first = new Map<string, Look>();
  const firstLooks = Promise.all(
    plan.upstream.map(async (u) => {
      const r = await look(u, signal);
      if (r.look) first.set(u.host, r.look);
    }),
  );
  if (plan.unseen.length > 0)
    log?.info(
      'net',
      `Drain: host${plan.unseen.length === 1 ? '' : 's'} ${plan.unseen.join(', ')} ` +
        `send${plan.unseen.length === 1 ? 's' : ''} through NNCP: tokens still ` +
        `on their way from there are not waited for`,
    );
  let said = '';
  let unreachable: string | undefined; // the host last found out of reach, warned about once
  const waiting = (why: string) => {
    if (why !== said) log?.info('net', `Drain: waiting: ${why}`);
    said = why;
    return false;
  };
  return async () => {
    await firstLooks;
    for (const place of plan.ownOutboxes) {
      const n = countJobs(view.places.get(place)!.dir);
      // A stopped sender won't send them in this run: they are listed when it ends.
      if (n > 0 && !senders.get(place)?.stopped)
        return waiting(`${n} token${n === 1 ? '' : 's'} in the outbox for ${place} still to send`);
    }
    const once = () => Promise.all(plan.upstream.map((u) => look(u, signal)));
    const a = await once();
    const b = await once();
    const left: RemoteLeftover[] = [];
    for (const [i, u] of plan.upstream.entries()) {
      const la = a[i]!.look;
      const lb = b[i]!.look;
      if (!la || !lb) {
        const error = a[i]!.error ?? b[i]!.error;
        if (unreachable !== u.host) log?.warn('net', `Drain: cannot look at host ${u.host} (${error}); trying again`);
        unreachable = u.host;
        return waiting(`cannot look at host ${u.host}: ${error}`);
      }
      if (!first.has(u.host)) first.set(u.host, la);
      const v = judge(u, la, lb, first.get(u.host)!);
      if (v.kind === 'wait') return waiting(v.why);
      if (v.kind === 'left') for (const t of v.tokens) left.push({ host: u.host, ...t });
    }
    unreachable = undefined;
    elsewhere.splice(0, elsewhere.length, ...left);
    return true;
  };
}
