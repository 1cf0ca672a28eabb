/**
 * The monitoring figures: the status as Prometheus text; the live colouring of the drawing (the rates, p95 and failures
 * a run keeps: test/net/run/monitor.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadNetFile } from '../../../src/net/model/netfile.js';
import { liveDotState, netToDot } from '../../../src/net/observe/dot.js';
import { netMetricFamilies, netMetricsText, netStatusJson } from '../../../src/net/observe/metrics.js';
import type { NetStatusReport } from '../../../src/net/observe/status.js';
import { dotToSvg } from '../../../src/net/observe/svg.js';
import { parseExposition } from '../../web/prometheus-reader.js';

const FIXTURES = path.resolve(__dirname, '../../fixtures/net');
const VIDEO = path.resolve(__dirname, '../../../docs/nets/video/video.yaml');
const T0 = 1_700_000_000_000; // a whole second

/** A report as netStatus makes it, with fixed figures. */
function report(): NetStatusReport {
  const t = (
    name: string,
    over: Partial<NetStatusReport['transitions'][number]> = {},
  ): NetStatusReport['transitions'][number] => ({
    name,
    running: 0,
    waiting: 0,
    fired: 0,
    failed: 0,
    retried: 0,
    waitingMerges: 0,
    perMinute1: 0,
    perMinute15: 0,
    failedPerMinute15: 0,
    failing: false,
    serviceTimes: [],
    history: [],
    ...over,
  });
  return {
    net: '/nets/video.yaml',
    state: 'running',
    live: true,
    pid: 42,
    updatedAt: T0,
    startedAt: T0 - 60_000,
    at: T0,
    places: [
      {
        name: 'inbox',
        dir: '/p/inbox',
        role: 'source',
        exists: true,
        tokens: 3,
        oldestAgeMs: 12_500,
        stuck: 0,
        next: 7n,
      },
      {
        name: 'decoded',
        dir: '/p/decoded',
        role: 'inner',
        exists: true,
        tokens: 8,
        oldestAgeMs: 1500,
        capacity: 10,
        fill: 0.8,
        stuck: 0,
      },
      { name: 'shaky', dir: '/p/shaky', role: 'inner', exists: true, tokens: 1, oldestAgeMs: 600_000, stuck: 1 },
      {
        name: 'audio',
        dir: '/p/audio',
        role: 'inner',
        exists: false,
        problem: 'no queue at /p/audio',
        tokens: 0,
        stuck: 0,
      },
    ],
    transitions: [
      t('decode', {
        running: 2,
        fired: 120,
        perMinute1: 30,
        perMinute15: 8,
        meanServiceMs: 1500,
        p95ServiceMs: 4000,
        sinceLastFiredMs: 2000,
        lastFiredAt: T0 - 2000,
      }),
      t('stabilize', {
        fired: 3,
        failed: 2,
        retried: 4,
        failing: true,
        stopped: { reason: 'exited with status 1 (key a"b)', log: '/s/logs/x', at: T0 },
      }),
      t('mux'),
    ],
    stuck: [{ place: 'shaky', seq: 4n, key: 'clip-4', filename: 'fspl-4.fspl', reason: 'stabilize stopped' }],
    waiting: [],
  };
}

describe('the status as Prometheus text', () => {
  test('every line is valid text format 0.0.4, with the figures of the report', () => {
    const text = netMetricsText(report());
    const families = parseExposition(text); // throws on any bad line
    const value = (name: string, labels: Record<string, string> = {}) => {
      const f = families.find((x) => name.startsWith(x.name));
      const s = f?.samples.find(
        (x) =>
          x.name === name &&
          x.labels.length === Object.keys(labels).length &&
          x.labels.every(([k, v]) => labels[k] === v),
      );
      return s?.value;
    };
    expect(value('fspl_net_live')).toBe('1');
    expect(value('fspl_net_state', { state: 'running' })).toBe('1');
    expect(value('fspl_net_state', { state: 'stuck' })).toBe('0');
    expect(value('fspl_net_stuck_tokens')).toBe('1');
    expect(value('fspl_net_place_tokens', { place: 'decoded' })).toBe('8');
    expect(value('fspl_net_place_oldest_token_age_seconds', { place: 'inbox' })).toBe('12.5');
    expect(value('fspl_net_place_oldest_token_age_seconds', { place: 'audio' })).toBeUndefined();
    expect(value('fspl_net_place_present', { place: 'audio' })).toBe('0');
    expect(value('fspl_net_place_capacity', { place: 'decoded' })).toBe('10');
    expect(value('fspl_net_place_fill_ratio', { place: 'decoded' })).toBe('0.8');
    expect(value('fspl_net_transition_fired_total', { transition: 'decode' })).toBe('120');
    expect(value('fspl_net_transition_firings_per_minute', { transition: 'decode', window: '1m' })).toBe('30');
    expect(value('fspl_net_transition_firings_per_minute', { transition: 'decode', window: '15m' })).toBe('8');
    expect(value('fspl_net_transition_service_seconds_p95', { transition: 'decode' })).toBe('4');
    expect(value('fspl_net_transition_service_seconds_mean', { transition: 'mux' })).toBeUndefined();
    expect(value('fspl_net_transition_failing', { transition: 'stabilize' })).toBe('1');
    expect(value('fspl_net_transition_stopped', { transition: 'stabilize' })).toBe('1');
    expect(value('fspl_net_transition_seconds_since_last_firing', { transition: 'decode' })).toBe('2');
    expect(families.find((f) => f.name === 'fspl_net_transition_fired_total')?.type).toBe('counter');
    // Every family is declared once, with HELP and TYPE.
    expect(new Set(families.map((f) => f.name)).size).toBe(netMetricFamilies(report()).length);
    expect(families.every((f) => f.help && f.type)).toBe(true);
  });

  test('the JSON form writes bigints as strings', () => {
    const j = netStatusJson(report()) as { places: Array<{ next?: string }>; stuck: Array<{ seq: string }> };
    expect(j.places[0]!.next).toBe('7');
    expect(j.stuck[0]!.seq).toBe('4');
  });
});

describe('the live drawing', () => {
  const net = loadNetFile(VIDEO);
  const state = () => {
    const r = report();
    // The video net's own places and transitions, with the fixed figures above where names match.
    r.places.push({ name: 'failed', dir: '/p/failed', role: 'error', exists: true, tokens: 2, stuck: 0 });
    return liveDotState(r);
  };

  test(
    'colours by the state: counts, running, stuck and missing ' + 'places and failing transitions in red (golden file)',
    () => {
      const s = state();
      expect([...s.alarm!].sort()).toEqual(['audio', 'shaky', 'stabilize']);
      expect(s.running).toEqual(new Map([['decode', 2]]));
      const dot = netToDot(net, s);
      expect(dot).toBe(fs.readFileSync(path.join(FIXTURES, 'video-live.dot'), 'utf8'));
    },
  );

  test('a paused transition is drawn dashed, in amber, and says so', () => {
    const r = report();
    r.transitions.push({
      ...r.transitions[2]!,
      name: 'pass',
      paused: {
        transition: 'pass',
        since: T0,
        by: 'op',
        reason: 'upgrade',
        kill: false,
        text: 'paused since then by op: upgrade',
      },
    });
    const dot = netToDot(net, liveDotState(r));
    expect(dot).toContain(
      '"t:pass" [shape=box, label="pass\\npaused", id="transition-pass", ' +
        'style="filled,dashed", fillcolor="#fff1c2", color="#a07000"];',
    );
    expect(dot).toContain('"t:mux" [shape=box, label="mux", id="transition-mux", peripheries=2];');
  });

  test('renders to SVG in-process, every place and transition drawn with its id', async () => {
    const svg = await dotToSvg(netToDot(net, state()));
    expect(svg).toMatch(/^<\?xml/);
    for (const p of net.places.keys()) expect(svg).toContain(`id="place&#45;${p}"`);
    for (const t of net.transitions.keys()) expect(svg).toContain(`id="transition&#45;${t}"`);
    expect(svg).toContain('#ffb3b3'); // the failing transition
    // Rendering is deterministic: the same drawing twice.
    expect(await dotToSvg(netToDot(net, state()))).toBe(svg);
  });
});
