/**
 * A watching run's queues as Prometheus metric families (names fspl_queue_*), from the figures
 * of monitor.ts; the `queue` label is the queue's directory as given, the `outcome` label one of
 * the outcome words (outcome.ts). docs/grafana/queues.json draws them.
 */
import { formatMetrics, type MetricFamily, type Sample } from '../web/prometheus.js';
import type { QueueFigures, QueuesPage } from './monitor.js';
import { OUTCOME_WORDS } from './outcome.js';

/** The names of the families queueMetricFamilies gives, in order (a dashboard's queries are checked against them). */
export const QUEUE_METRIC_NAMES = [
  'fspl_queue_jobs_total',
  'fspl_queue_refused_packets_total',
  'fspl_queue_jobs_waiting',
  'fspl_queue_oldest_job_age_seconds',
  'fspl_queue_next_seq',
  'fspl_queue_running_job_seconds',
  'fspl_queue_last_success_timestamp_seconds',
  'fspl_queue_retries_due',
  'fspl_queue_stopped',
] as const;

/** One function: the families in the order /metrics shows them, read as a table. */
export function queueMetricFamilies(page: QueuesPage): MetricFamily[] {
  const per = (pick: (q: QueueFigures) => number | bigint | undefined): Sample[] =>
    page.queues.flatMap((q) => {
      const v = pick(q);
      return v === undefined ? [] : [{ labels: { queue: q.queue }, value: v }];
    });
  return [
    {
      name: 'fspl_queue_jobs_total',
      help: 'Jobs run and recorded in this run, by outcome (success, failure, timeout, retry, moved)',
      type: 'counter',
      samples: page.queues.flatMap((q) =>
        OUTCOME_WORDS.map((outcome) => ({ labels: { queue: q.queue, outcome }, value: q.jobs[outcome] })),
      ),
    },
    {
      name: 'fspl_queue_refused_packets_total',
      help: 'Packets refused by their signature and moved to refused/ in this run',
      type: 'counter',
      samples: per((q) => q.refused),
    },
    { name: 'fspl_queue_jobs_waiting', help: 'Job files in jobs/', type: 'gauge', samples: per((q) => q.waiting) },
    {
      name: 'fspl_queue_oldest_job_age_seconds',
      help: 'Age of the oldest job file in jobs/ (by its ctime); 0 when none',
      type: 'gauge',
      samples: per((q) => q.oldestAgeSeconds),
    },
    {
      name: 'fspl_queue_next_seq',
      help: 'The number nextseq holds: the job the queue runs next (sequence order)',
      type: 'gauge',
      samples: per((q) => (q.next === undefined ? undefined : BigInt(q.next))),
    },
    {
      name: 'fspl_queue_running_job_seconds',
      help: 'How long the running job has run; 0 when none runs',
      type: 'gauge',
      samples: per((q) => q.runningSeconds),
    },
    {
      name: 'fspl_queue_last_success_timestamp_seconds',
      help: 'When a job of the queue last succeeded in this run, seconds since the epoch',
      type: 'gauge',
      samples: per((q) => (q.lastSuccessAt === undefined ? undefined : q.lastSuccessAt / 1000)),
    },
    {
      name: 'fspl_queue_retries_due',
      help: 'Jobs waiting to be tried again',
      type: 'gauge',
      samples: per((q) => q.retriesDue),
    },
    {
      name: 'fspl_queue_stopped',
      help: '1 when the queue stopped on a failed job (or could not be processed), else 0',
      type: 'gauge',
      samples: per((q) => (q.state.kind === 'stopped' ? 1 : 0)),
    },
  ];
}

/** The text of /metrics. */
export function queueMetricsText(page: QueuesPage): string {
  return formatMetrics(queueMetricFamilies(page));
}
