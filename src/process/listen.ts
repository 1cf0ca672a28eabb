/**
 * `queue-process --watch --listen`, processQueue(s)' `listen`: the run's queues on a read-only
 * page with live figures, and the same figures at /metrics for Prometheus. Served by the core's
 * page server (src/web/server.ts, whose guards it gets, as `net serve` does). Queue names and a
 * job's output reach the page as JSON (every `<` escaped), put there as text by its script.
 */
import { describeSystemError } from '../base/errors.js';
import { silentLogger } from '../base/log.js';
import { type AssetTable, loadAssets } from '../web/assets.js';
import { PROMETHEUS_CONTENT_TYPE } from '../web/prometheus.js';
import { JSON_TYPE, type ListenOptions, type PageServer, type Reply, servePage } from '../web/server.js';
import { QueueMonitor, type QueuesPage } from './monitor.js';
import type { ProcessQueuesOptions, ProcessQueuesSummary, ProcessRunOptions, QueuesEvent } from './options.js';
import { queueMetricsText } from './queue-metrics.js';

/** The static assets, by exact URL path (web/assets.ts adds the shared style). */
const ASSETS: AssetTable = {
  '/': { file: 'queues.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'queues.html', type: 'text/html; charset=utf-8' },
  '/assets/queues.js': { file: 'queues.js', type: 'text/javascript; charset=utf-8' },
  '/assets/queues.css': { file: 'queues.css', type: 'text/css; charset=utf-8' },
};

/** Beside this module (src/process/web, dist/process/web), or from the bundle at ../process/web. */
const WEB_DIRS = [new URL('./web/', import.meta.url), new URL('../process/web/', import.meta.url)];

const STATE_SLOT = '<!--fspl:state-->';

/** The figures as JSON: what /api/status answers and the event stream sends. */
function pageJson(page: QueuesPage): string {
  return JSON.stringify(page);
}

/** The page with the figures of now in its data block (every `<` escaped), for its first paint. */
export function renderQueuesPage(template: string, page: QueuesPage): string {
  const state = pageJson(page).replace(/</g, '\\u003c');
  return template.replace(STATE_SLOT, () => state);
}

/** Serve the monitor's queues: the page, /api/status, /api/events and /metrics. */
export async function serveQueues(monitor: QueueMonitor, options: ListenOptions = {}): Promise<PageServer> {
  const assets = loadAssets(ASSETS, WEB_DIRS);
  const template = assets.get('/')!.body.toString();
  const answer = async (route: string): Promise<Reply | undefined> => {
    const asset = assets.get(route);
    if (asset?.type.startsWith('text/html'))
      return { type: asset.type, body: renderQueuesPage(template, monitor.page()) };
    if (asset) return asset;
    if (route === '/metrics') return { type: PROMETHEUS_CONTENT_TYPE, body: queueMetricsText(monitor.page()) };
    if (route === '/api/status') return { type: JSON_TYPE, body: `${pageJson(monitor.page())}\n` };
    return undefined;
  };
  return servePage(
    {
      log: { target: 'process', name: 'listen' },
      answer,
      eventsPath: '/api/events',
      events: async () => pageJson(monitor.page()),
      // Ages and durations change all the time; anything else is sent at once, they once a second.
      shape: (json) => json.replace(/"(at|oldestAgeSeconds|runningSeconds)":[0-9.e+-]+/g, ''),
    },
    { pollMs: 500, ...options, logger: options.logger ?? silentLogger },
  );
}

/** processQueues with its page served: `run` gets the options with the page's listener fed first, then the caller's. */
export function withQueuesPage(
  opts: ProcessQueuesOptions,
  run: (opts: ProcessQueuesOptions) => Promise<ProcessQueuesSummary>,
): Promise<ProcessQueuesSummary> {
  return withQueuePage(opts, 'processQueues', (monitor) => {
    const onEvent = (e: QueuesEvent) => {
      monitor.onQueuesEvent(e);
      opts.onEvent?.(e);
    };
    return run({ ...opts, listen: undefined, onEvent });
  });
}

/**
 * Run `body` with the page served: the monitor it is given is fed by the run's events; the page
 * closes when the run ends, however. `listen` without `watch` is a TypeError: a run of one pass
 * ends before anyone could look.
 */
export async function withQueuePage<T>(
  opts: ProcessRunOptions,
  caller: string,
  body: (monitor: QueueMonitor) => Promise<T>,
): Promise<T> {
  const { listen } = opts;
  if (!listen) throw new TypeError(`${caller}: withQueuePage needs listen`);
  if (!opts.watch)
    throw new TypeError(`${caller}: listen needs watch (a run of one pass ends before anyone could look)`);
  const monitor = new QueueMonitor({ orderBy: opts.orderBy, outputTo: opts.outputTo, onError: opts.onError });
  const server = await serveQueues(monitor, { ...listen, logger: listen.logger ?? opts.logger });
  try {
    listen.onListening?.(server.url);
  } catch (err) {
    opts.logger?.warn('process', `listen: onListening failed: ${describeSystemError(err)}`);
  }
  try {
    return await body(monitor);
  } finally {
    await server.close();
  }
}
