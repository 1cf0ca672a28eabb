/**
 * QueueMonitor (monitor.ts) and its metrics (queue-metrics.ts): what each event counts, and a
 * /metrics text that a strict reader parses back to the same queue names, whatever they hold.
 */
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import { QueueMonitor } from '../../src/process/monitor.js';
import { QUEUE_METRIC_NAMES, queueMetricsText } from '../../src/process/queue-metrics.js';
import { Queue } from '../../src/queue/queue.js';
import { memTempDir } from '../helpers.js';
import { parseExposition } from '../web/prometheus-reader.js';

const end = (seq: bigint, more: object) => ({
  type: 'end' as const,
  seq,
  filename: `f${seq}.fspl`,
  ok: false,
  why: 'x',
  ...more,
});

describe('QueueMonitor', () => {
  test(
    'a retry due: the queue waits until then (retriesDue 1, the state ' +
      'says until when), not stopped; a move counts and the queue goes on',
    () => {
      const q = Queue.init(path.join(memTempDir(), 'r'));
      const m = new QueueMonitor({ onError: 'retry' });
      m.onQueuesEvent({ type: 'added', queue: q.dir });
      const at = new Date(Date.now() + 60_000);
      m.onQueuesEvent({ queue: q.dir, ...end(1n, { outcome: 'retry', retryAt: at }) });
      let f = m.page().queues[0]!;
      expect([f.jobs.retry, f.retriesDue, f.state]).toEqual([1, 1, { kind: 'waiting', seq: '1', until: at.getTime() }]);
      m.onQueuesEvent({ type: 'start', queue: q.dir, seq: 1n, filename: 'f1.fspl' });
      m.onQueuesEvent({ queue: q.dir, ...end(1n, { outcome: 'moved' }) });
      f = m.page().queues[0]!;
      expect([f.jobs.retry, f.jobs.moved, f.retriesDue, f.state.kind]).toEqual([1, 1, 0, 'waiting']);
      expect(f.failures.map((x) => x.outcome)).toEqual(['moved', 'retry']);
    },
  );

  test(
    'each event counts once where it belongs; interrupted jobs count ' +
      'nowhere; a start clears a stop; a removed queue is forgotten',
    () => {
      const parent = memTempDir();
      const q = Queue.init(path.join(parent, 'a'));
      q.writeBuffer(encodeHeader(makeHeader({ seq: 5n, cmd: { kind: 'NOP' } })));
      const m = new QueueMonitor({ onError: 'delete' });
      m.onQueuesEvent({ type: 'added', queue: q.dir });
      m.onQueuesEvent({ type: 'start', queue: q.dir, seq: 1n, filename: 'f1.fspl' });
      expect(m.page().queues[0]!.state).toMatchObject({ kind: 'running', seq: '1' });
      m.onQueuesEvent({ queue: q.dir, ...end(1n, { ok: true, why: 'ok', outcome: 'success' }) });
      m.onQueuesEvent({ queue: q.dir, ...end(2n, { outcome: 'timeout', why: 'command timed out and was killed' }) });
      m.onQueuesEvent({ queue: q.dir, ...end(3n, { outcome: 'failure' }) });
      m.onQueuesEvent({ queue: q.dir, ...end(4n, { refused: true, why: 'unsigned' }) });
      m.onQueuesEvent({ queue: q.dir, ...end(5n, { interrupted: true }) });
      let f = m.page().queues[0]!;
      expect([f.jobs, f.refused, f.waiting, f.next, f.state.kind]).toEqual([
        { success: 1, failure: 1, timeout: 1, retry: 0, moved: 0 },
        1,
        1,
        '1',
        'waiting',
      ]);
      expect(f.failures.map((x) => [x.seq, x.outcome])).toEqual([
        ['3', 'failure'],
        ['2', 'timeout'],
      ]);
      expect(f.lastSuccessAt).toBeGreaterThan(0);
      m.onQueuesEvent({ type: 'stopped', queue: q.dir, error: new Error('disk full') });
      expect(m.page().queues[0]!.state).toEqual({ kind: 'stopped', seq: '3', why: 'disk full' });
      m.onQueuesEvent({ type: 'start', queue: q.dir, seq: 6n, filename: 'f6.fspl' });
      f = m.page().queues[0]!;
      expect(f.state.kind).toBe('running');
      m.onQueuesEvent({ type: 'removed', queue: q.dir });
      expect(m.page().queues).toEqual([]);
    },
  );

  test(
    'under --on-error Retry (the default) a failure stops ' + 'its queue: one queue, where no stopped event follows',
    () => {
      const m = new QueueMonitor();
      m.onJobEvent('/q', { type: 'start', seq: 7n, filename: 'f7.fspl' });
      m.onJobEvent('/q', end(7n, { outcome: 'failure', why: 'command exited with status 1' }));
      expect(m.page().queues[0]!.state).toEqual({
        kind: 'stopped',
        seq: '7',
        why: 'job 7 command exited with status 1',
      });
    },
  );
});

describe('the queues as Prometheus text', () => {
  test('any queue name parses back as it was (quotes, backslashes, newlines, non-ASCII); every family in order', () => {
    const names = ['/srv/q"1', 'C:\\queues\\b', 'line\nbreak', '/srv/é/日本'];
    const m = new QueueMonitor();
    for (const n of names) m.add(n);
    m.onJobEvent(names[0]!, end(1n, { ok: true, outcome: 'success' }));
    const families = parseExposition(queueMetricsText(m.page()));
    expect(families.map((f) => f.name)).toEqual([...QUEUE_METRIC_NAMES]);
    const jobs = families.find((f) => f.name === 'fspl_queue_jobs_total')!;
    expect(new Set(jobs.samples.map((s) => s.labels.find(([k]) => k === 'queue')![1]))).toEqual(new Set(names));
    expect(jobs.samples.length).toBe(names.length * 5);
    const ok = jobs.samples.find(
      (s) =>
        s.labels.some(([k, v]) => k === 'queue' && v === names[0]) &&
        s.labels.some(([k, v]) => k === 'outcome' && v === 'success'),
    );
    expect(ok?.value).toBe('1');
    // Directories that are not there: nothing waiting, no next number, no error.
    expect(families.find((f) => f.name === 'fspl_queue_next_seq')!.samples).toEqual([]);
  });
});
