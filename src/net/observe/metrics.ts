/**
 * The figures operators watch a net by, built on prometheus.ts (the text format): the status
 * report as the documented JSON (docs/json.md), and the same report as Prometheus metric
 * families (what the runner keeps per transition: run/monitor.ts). Nothing here reads a clock or a file.
 */
import { formatMetrics, type MetricFamily, type Sample } from '../../web/prometheus.js';
import type { NetStatusReport } from './status.js';

/** The status report as `fspl net status --json` prints it (docs/json.md): bigints as strings. */
export function netStatusJson(r: NetStatusReport): unknown {
  return JSON.parse(JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
}

const seconds = (ms: number) => ms / 1000;

/**
 * The status report as Prometheus metric families (names fspl_net_*). Counters are the live run's
 * (they start again at 0 with each `net run`, which Prometheus reads as a counter reset); rates and
 * service times are gauges; a value that is not known yet (no firing so far) is left out.
 * One function: a list of families, in the order /metrics shows them, read as a table.
 */
export function netMetricFamilies(r: NetStatusReport): MetricFamily[] {
  const perPlace = (pick: (p: NetStatusReport['places'][number]) => number | undefined): Sample[] =>
    r.places.flatMap((p) => {
      const v = pick(p);
      return v === undefined ? [] : [{ labels: { place: p.name }, value: v }];
    });
  const perTransition = (pick: (t: NetStatusReport['transitions'][number]) => number | undefined): Sample[] =>
    r.transitions.flatMap((t) => {
      const v = pick(t);
      return v === undefined ? [] : [{ labels: { transition: t.name }, value: v }];
    });
  const states = ['running', 'idle', 'stuck', 'drained'] as const;
  return [
    {
      name: 'fspl_net_live',
      help: '1 when a net run holds the net, else 0',
      type: 'gauge',
      samples: [{ value: r.live ? 1 : 0 }],
    },
    {
      name: 'fspl_net_state',
      help: 'The state of the net: 1 for the current one',
      type: 'gauge',
      samples: states.map((s) => ({ labels: { state: s }, value: r.state === s ? 1 : 0 })),
    },
    {
      name: 'fspl_net_stuck_tokens',
      help: 'Tokens that cannot fire',
      type: 'gauge',
      samples: [{ value: r.stuck.length }],
    },
    { name: 'fspl_net_place_tokens', help: 'Tokens in the place', type: 'gauge', samples: perPlace((p) => p.tokens) },
    {
      name: 'fspl_net_place_present',
      help: '1 when the place directory can be read, else 0',
      type: 'gauge',
      samples: perPlace((p) => (p.exists && !p.problem ? 1 : 0)),
    },
    {
      name: 'fspl_net_place_oldest_token_age_seconds',
      help: 'Age of the oldest token in the place',
      type: 'gauge',
      samples: perPlace((p) => (p.oldestAgeMs === undefined ? undefined : seconds(p.oldestAgeMs))),
    },
    {
      name: 'fspl_net_place_capacity',
      help: 'Capacity of the place (places with one)',
      type: 'gauge',
      samples: perPlace((p) => p.capacity),
    },
    {
      name: 'fspl_net_place_fill_ratio',
      help: 'Tokens divided by capacity (places with one)',
      type: 'gauge',
      samples: perPlace((p) => p.fill),
    },
    {
      name: 'fspl_net_place_stuck_tokens',
      help: 'Tokens in the place that cannot fire',
      type: 'gauge',
      samples: perPlace((p) => p.stuck),
    },
    {
      name: 'fspl_net_refused_tokens_total',
      help:
        'Tokens of a place that requires signatures refused and set aside ' +
        '(still in the set-aside queue: net retry --set-aside takes them out)',
      type: 'counter',
      samples: perPlace((p) => p.refused),
    },
    {
      name: 'fspl_net_transition_running',
      help: 'Firings running now',
      type: 'gauge',
      samples: perTransition((t) => t.running),
    },
    {
      name: 'fspl_net_transition_fired_total',
      help: 'Firings committed by the current (or last) run',
      type: 'counter',
      samples: perTransition((t) => t.fired),
    },
    {
      name: 'fspl_net_transition_failed_total',
      help: 'Firings that failed for good (error place or stop)',
      type: 'counter',
      samples: perTransition((t) => t.failed),
    },
    {
      name: 'fspl_net_transition_retried_total',
      help: 'Failed attempts that were retried',
      type: 'counter',
      samples: perTransition((t) => t.retried),
    },
    {
      name: 'fspl_net_transition_firings_per_minute',
      help: 'Firings per minute over the window',
      type: 'gauge',
      samples: r.transitions.flatMap((t) => [
        { labels: { transition: t.name, window: '1m' }, value: t.perMinute1 },
        { labels: { transition: t.name, window: '15m' }, value: t.perMinute15 },
      ]),
    },
    {
      name: 'fspl_net_transition_service_seconds_mean',
      help: 'Mean service time of recent firings',
      type: 'gauge',
      samples: perTransition((t) => (t.meanServiceMs === undefined ? undefined : seconds(t.meanServiceMs))),
    },
    {
      name: 'fspl_net_transition_service_seconds_p95',
      help: '95th percentile (nearest rank) of recent service times',
      type: 'gauge',
      samples: perTransition((t) => (t.p95ServiceMs === undefined ? undefined : seconds(t.p95ServiceMs))),
    },
    {
      name: 'fspl_net_transition_seconds_since_last_firing',
      help: 'Time since the transition last fired',
      type: 'gauge',
      samples: perTransition((t) => (t.sinceLastFiredMs === undefined ? undefined : seconds(t.sinceLastFiredMs))),
    },
    {
      name: 'fspl_net_transition_failing',
      help: '1 when the transition is stopped or failed in the last 5 minutes',
      type: 'gauge',
      samples: perTransition((t) => (t.failing ? 1 : 0)),
    },
    {
      name: 'fspl_net_transition_stopped',
      help: '1 when the transition stopped after a failure',
      type: 'gauge',
      samples: perTransition((t) => (t.stopped ? 1 : 0)),
    },
    {
      name: 'fspl_net_transition_paused',
      help: '1 while an operator has paused the transition (net pause)',
      type: 'gauge',
      samples: perTransition((t) => (t.paused ? 1 : 0)),
    },
    {
      name: 'fspl_net_io_errors_total',
      help:
        'Full disks and I/O errors the run met (and waited out), by place ' +
        '("(state)": the state directory) and error',
      type: 'counter',
      samples: (r.ioErrors ?? []).map((e) => ({ labels: { place: e.place, error: e.error }, value: e.count })),
    },
    {
      name: 'fspl_net_io_fault_since_seconds',
      help: "Since when (Unix time) the place's disk has been full or failing, while it is",
      type: 'gauge',
      samples: (r.ioFaults ?? []).map((f) => ({ labels: { place: f.place, error: f.code }, value: seconds(f.since) })),
    },
  ];
}

/** The report in the Prometheus text format 0.0.4. */
export function netMetricsText(r: NetStatusReport): string {
  return formatMetrics(netMetricFamilies(r));
}
