/**
 * processQueues' and processQueue's `listen` (queue-process --watch --listen): /metrics parses
 * strictly and says what ran (jobs by outcome, waiting, next number, stopped), /api/status has
 * the same with each stopped queue's reason, a foreign Host is refused as on the nets' page, and
 * the CLI refuses --listen without --watch or with a bad address in one line.
 */
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeHeader } from '../../src/packet/codec.js';
import { makeHeader } from '../../src/packet/prepare.js';
import { processQueues } from '../../src/process/many-queues.js';
import type { QueuesPage } from '../../src/process/monitor.js';
import type { JobContext } from '../../src/process/process.js';
import { processQueue } from '../../src/process/process.js';
import { QUEUE_METRIC_NAMES } from '../../src/process/queue-metrics.js';
import { Queue } from '../../src/queue/queue.js';
import { FSPL_BIN, memTempDir } from '../helpers.js';
import { parseExposition } from '../web/prometheus-reader.js';

function put(q: Queue, seq: number): void {
  q.writeBuffer(encodeHeader(makeHeader({ seq: BigInt(seq), cmd: { kind: 'Command', params: [], env: [] } })));
}

function get(url: string, host?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: host ? { Host: host } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

/** Poll /api/status until `done` holds (each answer is checked, not how long it took). */
async function statusWhen(url: string, done: (p: QueuesPage) => boolean): Promise<QueuesPage> {
  for (;;) {
    const page = JSON.parse((await get(`${url}api/status`)).body) as QueuesPage;
    if (done(page)) return page;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('listen: the queues of a watching run, served', () => {
  it('/metrics parses strictly and matches what ran; /api/status says why a queue stopped; a foreign Host gets 421', {
    timeout: 30_000,
  }, async () => {
    const parent = memTempDir();
    const [ok, bad, slow] = ['ok', 'bad', 'slow'].map((n) => Queue.init(path.join(parent, n)));
    for (const s of [1, 2, 3]) put(ok!, s);
    put(bad!, 1);
    put(bad!, 2);
    put(slow!, 1);
    const run = async (job: JobContext) => {
      job.payload.resume();
      if (job.queuedir === bad!.dir) throw new Error('no <good>');
      // Waits for its timeout.
      if (job.queuedir === slow!.dir) await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
    };
    const stop = new AbortController();
    let listened: (url: string) => void = () => {};
    const listening = new Promise<string>((resolve) => (listened = resolve));
    const summary = processQueues([ok!, bad!, slow!], {
      run,
      timeout: 0.2,
      watch: true,
      signal: stop.signal,
      listen: { port: 0, onListening: (u) => listened(u) },
    });
    const url = await listening;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await statusWhen(
      url,
      (p) =>
        p.queues.length === 3 &&
        p.queues.filter((q) => q.state.kind === 'stopped').length === 2 &&
        p.queues[0]!.jobs.success === 3,
    );
    const by = new Map(page.queues.map((q) => [path.basename(q.queue), q]));
    expect(by.get('bad')!.state).toEqual({ kind: 'stopped', seq: '1', why: expect.stringContaining('no <good>') });
    expect(by.get('bad')!.failures.map((f) => [f.seq, f.outcome, f.why])).toEqual([
      ['1', 'failure', expect.stringContaining('no <good>')],
    ]);
    expect(by.get('slow')!.state).toMatchObject({ kind: 'stopped', seq: '1' });
    expect(by.get('ok')!.state).toEqual({ kind: 'waiting', seq: '4' });

    const metrics = await get(`${url}metrics`);
    expect(metrics.status).toBe(200);
    const families = parseExposition(metrics.body);
    expect(families.map((f) => f.name)).toEqual([...QUEUE_METRIC_NAMES]);
    const value = (name: string, labels: Record<string, string>) => {
      const f = families.find((x) => x.name === name)!;
      const s = f.samples.find((x) =>
        Object.entries(labels).every(([k, v]) => x.labels.some(([lk, lv]) => lk === k && lv === v)),
      );
      return s === undefined ? undefined : Number(s.value);
    };
    const jobs = (q: Queue, outcome: string) => value('fspl_queue_jobs_total', { queue: q.dir, outcome });
    expect([
      jobs(ok!, 'success'),
      jobs(ok!, 'failure'),
      jobs(bad!, 'failure'),
      jobs(slow!, 'timeout'),
      jobs(slow!, 'success'),
    ]).toEqual([3, 0, 1, 1, 0]);
    expect([
      value('fspl_queue_jobs_waiting', { queue: ok!.dir }),
      value('fspl_queue_jobs_waiting', { queue: bad!.dir }),
    ]).toEqual([0, 2]);
    expect([
      value('fspl_queue_next_seq', { queue: ok!.dir }),
      value('fspl_queue_next_seq', { queue: bad!.dir }),
    ]).toEqual([4, 1]);
    expect([value('fspl_queue_stopped', { queue: ok!.dir }), value('fspl_queue_stopped', { queue: bad!.dir })]).toEqual(
      [0, 1],
    );
    expect(value('fspl_queue_oldest_job_age_seconds', { queue: bad!.dir })).toBeGreaterThanOrEqual(0);
    expect(value('fspl_queue_last_success_timestamp_seconds', { queue: ok!.dir })).toBeGreaterThan(0);
    expect(value('fspl_queue_last_success_timestamp_seconds', { queue: bad!.dir })).toBeUndefined();

    // The nets' page's guard: a name that is not the server's is refused on every path.
    const port = new URL(url).port;
    for (const route of ['', 'metrics', 'api/status'])
      expect((await get(`${url}${route}`, `evil.example:${port}`)).status).toBe(421);
    const html = await get(url);
    expect(html.body).not.toContain('no <good>'); // in the data block every < is escaped
    expect(html.body).toContain('no \\u003cgood>');
    // The style both pages share, then the page's own.
    expect(html.body).toContain(
      '<link rel="stylesheet" href="/assets/base.css">\n<link rel="stylesheet" href="/assets/queues.css">',
    );
    expect((await get(`${url}assets/base.css`)).body).toContain('font-family');
    stop.abort();
    expect((await summary).queues.map((q) => q.state)).toEqual(['done', 'stopped', 'stopped']);
  });

  it('processQueue: the one queue served while it watches; listen without watch is a TypeError', async () => {
    const q = Queue.init(path.join(memTempDir(), 'one'));
    put(q, 1);
    const stop = new AbortController();
    let seen: QueuesPage | undefined;
    const run = async (job: JobContext) => {
      job.payload.resume();
    };
    const done = processQueue(q, {
      run,
      watch: true,
      signal: stop.signal,
      listen: {
        onListening: (url) => {
          void statusWhen(url, (p) => p.queues[0]?.jobs.success === 1).then((p) => {
            seen = p;
            stop.abort();
          });
        },
      },
    });
    expect((await done).succeeded).toBe(1);
    expect(seen!.queues.map((x) => [x.queue, x.next, x.waiting])).toEqual([[q.dir, '2', 0]]);
    await expect(processQueue(q, { run, listen: {} })).rejects.toThrow(/listen needs watch/);
    await expect(processQueues([q], { run, listen: {} })).rejects.toThrow(/listen needs watch/);
  });

  it(
    'allowHosts: the names given are served, others still ' + 'refused; a bad one is refused before anything runs',
    async () => {
      const q = Queue.init(path.join(memTempDir(), 'hosts'));
      const run = async (job: JobContext) => {
        job.payload.resume();
      };
      const stop = new AbortController();
      const answers: number[] = [];
      await processQueues([q], {
        run,
        watch: true,
        signal: stop.signal,
        listen: {
          allowHosts: ['Fspl.Test.'],
          onListening: (url) => {
            const port = new URL(url).port;
            void (async () => {
              for (const host of [`fspl.test:${port}`, `other.test:${port}`, `localhost:${port}`])
                answers.push((await get(`${url}metrics`, host)).status);
              stop.abort();
            })();
          },
        },
      });
      expect(answers).toEqual([200, 421, 200]);
      await expect(processQueues([q], { run, watch: true, listen: { allowHosts: ['fspl.test:80'] } })).rejects.toThrow(
        /not a host name or an IP address/,
      );
    },
  );

  it.each([
    [['--listen', '0'], /--listen only applies with --watch/],
    [['--watch', '--listen', 'nowhere'], /invalid value 'nowhere' for --listen: expected \[HOST:\]PORT/],
    [['--watch', '--listen', '1:99999'], /invalid value '1:99999' for --listen/],
    [['--allow-host', 'x.test'], /--allow-host only applies with --listen/],
  ])('queue-process %j: one line, exit 2', (args, message) => {
    const q = Queue.init(path.join(memTempDir(), 'cli'));
    const r = spawnSync(FSPL_BIN, ['queue-process', '-q', q.dir, ...args, 'true'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(message);
  });
});
