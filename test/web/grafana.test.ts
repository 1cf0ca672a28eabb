/**
 * The Grafana dashboards of docs/grafana/ ask only for what fspl serves: every metric name in
 * every query (panels and template variables) is a family of the queues' /metrics
 * (queue-process --listen) or of the nets' (net serve), and a label a query selects or groups
 * by is one that family has.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { netMetricFamilies } from '../../src/net/observe/metrics.js';
import { queueMetricFamilies } from '../../src/process/queue-metrics.js';
import type { MetricFamily } from '../../src/web/prometheus.js';
import { ROOT } from '../helpers.js';

const DIR = path.join(ROOT, 'docs', 'grafana');

/** Every family served, with the labels its samples carry (figures chosen so that every family has one). */
function served(): Map<string, Set<string>> {
  const queues = queueMetricFamilies({
    at: 0,
    queues: [
      {
        queue: 'q',
        state: { kind: 'waiting', seq: '1' },
        jobs: { success: 1, failure: 0, timeout: 0, retry: 0, moved: 0 },
        refused: 0,
        waiting: 0,
        oldestAgeSeconds: 0,
        next: '1',
        runningSeconds: 0,
        lastSuccessAt: 1,
        retriesDue: 0,
        failures: [],
      },
    ],
  });
  const nets = netMetricFamilies({
    net: 'n',
    state: 'running',
    live: true,
    at: 0,
    places: [
      {
        name: 'p',
        dir: '/p',
        role: 'inner',
        exists: true,
        tokens: 1,
        oldestAgeMs: 1,
        capacity: 2,
        fill: 0.5,
        stuck: 0,
      },
    ],
    transitions: [],
    stuck: [],
    waiting: [],
  });
  const out = new Map<string, Set<string>>();
  const add = (f: MetricFamily, labels: Iterable<string>) => {
    const set = out.get(f.name) ?? new Set<string>();
    for (const l of labels) set.add(l);
    out.set(f.name, set);
  };
  for (const f of [...queues, ...nets])
    add(
      f,
      f.samples.flatMap((s) => Object.keys(s.labels ?? {})),
    );
  // Families whose samples this report leaves empty: their labels, as metrics.ts gives them.
  for (const name of out.keys()) if (name.startsWith('fspl_net_transition_')) out.get(name)!.add('transition');
  out.get('fspl_net_io_errors_total')?.add('place').add('error');
  out.get('fspl_net_io_fault_since_seconds')?.add('place');
  return out;
}

/** Every query of a dashboard: the panels' `expr` and the template variables' queries. */
function queries(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(queries);
  if (value === null || typeof value !== 'object') return [];
  const o = value as Record<string, unknown>;
  const own = typeof o.expr === 'string' ? [o.expr] : typeof o.definition === 'string' ? [o.definition] : [];
  return [...own, ...Object.entries(o).flatMap(([k, v]) => (k === 'definition' || k === 'expr' ? [] : queries(v)))];
}

const dashboards = fs.readdirSync(DIR).filter((f) => f.endsWith('.json'));

describe('the Grafana dashboards', () => {
  test('there are two: queues and nets', () => {
    expect(dashboards.sort()).toEqual(['nets.json', 'queues.json']);
  });

  test.each(dashboards)('%s: every query names only served metrics, and only their labels', (file) => {
    const board = JSON.parse(fs.readFileSync(path.join(DIR, file), 'utf8')) as { panels: unknown[]; uid: string };
    const families = served();
    const all = queries(board);
    expect(all.length).toBeGreaterThan(5);
    const bad: string[] = [];
    for (const q of all) {
      const names = [...q.matchAll(/\bfspl_[a-z0-9_]+/g)].map((m) => m[0]);
      if (names.length === 0) bad.push(`${q}: no fspl metric`);
      for (const name of names) {
        const labels = families.get(name);
        if (!labels) {
          bad.push(`${q}: ${name} is not served`);
          continue;
        }
        // Labels selected ({label=...}) right after the name, grouped by, or asked for by label_values.
        const selected = [...q.slice(q.indexOf(name) + name.length).matchAll(/^\{([^}]*)\}/g)].flatMap((m) =>
          [...m[1]!.matchAll(/([a-z_]+)\s*=~?/g)].map((x) => x[1]!),
        );
        const grouped = [...q.matchAll(/\bby \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((x) => x.trim()));
        const asked = [...q.matchAll(/label_values\([a-z0-9_]+,\s*([a-z_]+)\)/g)].map((m) => m[1]!);
        for (const l of [...selected, ...grouped, ...asked])
          if (!labels.has(l)) bad.push(`${q}: ${name} has no label ${l}`);
      }
    }
    expect(bad).toEqual([]);
  });

  test('the queues dashboard covers every family the queues serve', () => {
    const text = fs.readFileSync(path.join(DIR, 'queues.json'), 'utf8');
    const missing = [...served().keys()].filter((n) => n.startsWith('fspl_queue_') && !text.includes(n));
    expect(missing).toEqual([]);
  });
});
