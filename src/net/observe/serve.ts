/**
 * `fspl net serve`: a read-only web page that watches a net. It draws the net from its file (SVG
 * rendered in-process, svg.ts), serves the page with that drawing and the figures of the moment
 * in it (renderPage: its first paint shows them), keeps the figures live over Server-Sent Events,
 * lists a place's tokens or a transition's recent firings on click, and serves the same figures
 * to Prometheus at /metrics. Every figure is recomputed from the directories and STATE/live.json
 * (status.ts), so a run that stops or a directory that vanishes shows as such.
 *
 * Safety (docs/security.md; the guards are src/web/server.ts's, shared with the queues' page):
 * 127.0.0.1 unless told otherwise; GET and HEAD only; assets by exact name, never a path from the
 * URL; names, keys, params and stderr reach the page as JSON (every `<` escaped) and are shown as
 * text, under a Content Security Policy with no inline script; a Host that is not its own, a
 * loopback name or an allowHosts name gets 421 (DNS rebinding); at most maxStreams event streams
 * (503 with Retry-After for the rest).
 */
import { NetRequestError } from '../../base/errors.js';
import { type Logger, silentLogger } from '../../base/log.js';
import { type AssetTable, loadAssets } from '../../web/assets.js';
import { PROMETHEUS_CONTENT_TYPE } from '../../web/prometheus.js';
import { badListenOptions, JSON_TYPE, type PageServer, type Reply, servePage } from '../../web/server.js';
import { hostView } from '../model/hosts.js';
import type { NetModel } from '../model/model.js';
import { placeTokens, transitionDetail } from './detail.js';
import { netToDot } from './dot.js';
import { netMetricsText, netStatusJson } from './metrics.js';
import { hostStatus, NncpSpoolReader } from './outbox-status.js';
import { type NetStatusReport, netStatus } from './status.js';
import { dotToSvg } from './svg.js';

export interface ServeOptions {
  /** Port (default 8484; 0 picks a free one). */
  port?: number;
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /**
   * On a net that spans hosts: the host whose part is shown (its places, its run, its outboxes and
   * the places other hosts feed), as `net status --host` shows it.
   */
  netHost?: string;
  /** How often the figures are recomputed while a page watches, ms (default 300). */
  pollMs?: number;
  /**
   * Names (host names or IP addresses, without a port) the server answers to besides its own
   * address, localhost and the loopback addresses: the names a browser reaches it by. Bound to
   * every address (0.0.0.0 or ::), these are the only names it answers to but the loopback ones.
   */
  allowHosts?: readonly string[];
  /** Event streams (/api/events) open at once; more are refused with 503 (default 64). */
  maxStreams?: number;
  logger?: Logger;
}

export type NetServer = PageServer;

/**
 * Placeholder lines drawn into each node, which the page replaces with live figures: they give
 * every node its final size up front, so the layout does not move as numbers change.
 */
export const PLACE_LINES = ['0000 tokens', 'oldest 00m00s'];
export const TRANSITION_LINES = ['run 00  ok 000000', 'failed 0000  00.0/min'];

/** The static assets, by exact URL path (web/assets.ts adds the shared style). */
const ASSETS: AssetTable = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/assets/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/assets/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

/** Beside this module (src/net/observe/web, dist/net/observe/web), or from the bundle at ../net/observe/web. */
const WEB_DIRS = [new URL('./web/', import.meta.url), new URL('../net/observe/web/', import.meta.url)];

/** The drawing the page starts from: the net with placeholder lines in every node. */
export async function serveSvg(net: NetModel): Promise<string> {
  return dotToSvg(netToDot(net, { lines: (kind) => (kind === 'place' ? PLACE_LINES : TRANSITION_LINES) }));
}

/** The figures the page shows, as sent over the event stream and by /api/status. */
function pageJson(r: NetStatusReport): string {
  return JSON.stringify(netStatusJson(r));
}

/** Where the page's template takes the drawing and the figures (index.html). */
const DRAWING_SLOT = '<!--fspl:drawing-->';
const STATE_SLOT = '<!--fspl:state-->';

/**
 * The page as served: the drawing inline and the figures of now in a JSON data block that the
 * page's script reads first, so that its first paint (a screenshot at load) shows them, before
 * the event stream answers. In the data block every `<` is escaped (\u003c, which JSON reads as
 * the same character), so no text from the net can end the block or open markup; the drawing is
 * our own renderer's, of names that are `[A-Za-z][A-Za-z0-9_]*`.
 */
export function renderPage(template: string, svg: string, r: NetStatusReport): string {
  const inline = svg.slice(Math.max(0, svg.indexOf('<svg'))).trimEnd();
  const state = pageJson(r).replace(/</g, '\\u003c');
  // Functions, not strings, as replacements: `$&` and the like in the text stay as they are.
  return template.replace(DRAWING_SLOT, () => inline).replace(STATE_SLOT, () => state);
}

const jsonReply = (value: unknown): Reply => ({
  type: JSON_TYPE,
  body: `${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}\n`,
});

/** Serve a net's status page, its figures and its drawing over HTTP (src/web/server.ts serves it). */
export async function serveNet(whole: NetModel, options: ServeOptions = {}): Promise<NetServer> {
  const bad = badListenOptions(options);
  if (bad) throw new NetRequestError(bad);
  const netHost = options.netHost;
  const net = netHost === undefined ? whole : hostView(whole, netHost);
  // NNCP's spool is asked at most every 10 s (a subprocess), not at every poll.
  const spools = new NncpSpoolReader(10_000);
  const report = (): Promise<NetStatusReport> =>
    netHost === undefined ? netStatus(net) : hostStatus(whole, netHost, net, spools);
  const assets = loadAssets(ASSETS, WEB_DIRS);
  const svgText = await serveSvg(net);
  const svg = Buffer.from(svgText);
  const template = assets.get('/')!.body.toString();
  const status = async (): Promise<string> => pageJson(await report());

  const detail = async (kind: string, encoded: string): Promise<Reply | undefined> => {
    let name: string;
    try {
      name = decodeURIComponent(encoded);
    } catch {
      return { status: 400, type: 'text/plain; charset=utf-8', body: 'bad request\n' };
    }
    if (kind === 'place')
      return net.places.has(name)
        ? jsonReply({ place: name, ...(await placeTokens(net, name, { limit: 200 })) })
        : undefined;
    return net.transitions.has(name) ? jsonReply({ transition: name, ...transitionDetail(net, name) }) : undefined;
  };

  const answer = async (route: string): Promise<Reply | undefined> => {
    const asset = assets.get(route);
    if (asset?.type.startsWith('text/html'))
      return { type: asset.type, body: renderPage(template, svgText, await report()) };
    if (asset) return asset;
    if (route === '/net.svg') return { type: 'image/svg+xml; charset=utf-8', body: svg };
    if (route === '/metrics') return { type: PROMETHEUS_CONTENT_TYPE, body: netMetricsText(await report()) };
    if (route === '/api/status') return { type: JSON_TYPE, body: `${await status()}\n` };
    const m = /^\/api\/(place|transition)\/([^/]+)$/.exec(route);
    return m ? detail(m[1]!, m[2]!) : undefined;
  };

  return servePage(
    {
      log: { target: 'net', name: 'serve', option: '--max-streams' },
      answer,
      eventsPath: '/api/events',
      events: status,
      // Ages change all the time; anything else is sent at once, ages at least once a second.
      shape: (json) => json.replace(/"(oldestAgeMs|sinceLastFiredMs|at)":[0-9.e+-]+/g, ''),
    },
    { ...options, port: options.port ?? 8484, logger: options.logger ?? silentLogger },
  );
}
