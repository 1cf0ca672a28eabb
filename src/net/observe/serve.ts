/**
 * `fspl net serve`: a read-only web page that watches a net. It draws the net from its file (SVG
 * rendered in-process, svg.ts), serves the page with that drawing and the figures of the moment
 * in it (renderPage: its first paint shows them), keeps the figures live over Server-Sent Events,
 * lists a place's tokens or a transition's recent firings on click, and serves the same figures
 * to Prometheus at /metrics.
 *
 * Safety: it binds to 127.0.0.1 unless told otherwise; only GET and HEAD are answered (405
 * otherwise); the only files it serves are its own assets, looked up by exact name in a fixed
 * table (never by joining a path from the URL); names, keys, params and stderr reach the page as
 * JSON (in the page, a data block with every `<` escaped) and are put there as text by the
 * page's script (never as HTML); and a Content Security
 * Policy forbids inline scripts, so a key like `<script>` is shown, not run. It answers only to its
 * own names (host-check.ts): a request whose Host header is not its address, localhost, a loopback
 * address or a name given in allowHosts (--allow-host) gets 421, so that a page elsewhere on the
 * web cannot use DNS rebinding (its own name made to resolve to 127.0.0.1) to read the API (keys,
 * params, stderr) through the operator's browser; bound to every address (0.0.0.0 or ::), only the
 * loopback names and the allowed ones pass. It keeps at most maxStreams event streams open at once
 * (default 64, stream-cap.ts), refusing the rest with 503 and Retry-After, so that thousands of
 * them cannot take its memory and descriptors; the other paths answer meanwhile. Every figure is
 * recomputed from the directories and STATE/live.json (status.ts), so a run that stops or a
 * directory that vanishes shows as such.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { NetRequestError } from '../../base/errors.js';
import { type Logger, silentLogger } from '../../base/log.js';
import { hostView } from '../model/hosts.js';
import type { NetModel } from '../model/model.js';
import { placeTokens, transitionDetail } from './detail.js';
import { netToDot } from './dot.js';
import { badAllowedHost, hostCheck, MISDIRECTED } from './host-check.js';
import { netMetricsText, netStatusJson } from './metrics.js';
import { hostStatus, NncpSpoolReader } from './outbox-status.js';
import { PROMETHEUS_CONTENT_TYPE } from './prometheus.js';
import { type NetStatusReport, netStatus } from './status.js';
import { StreamCap } from './stream-cap.js';
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

export interface NetServer {
  /** The page's address, e.g. http://127.0.0.1:8484/ */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Placeholder lines drawn into each node, which the page replaces with live figures: they give
 * every node its final size up front, so the layout does not move as numbers change.
 */
export const PLACE_LINES = ['0000 tokens', 'oldest 00m00s'];
export const TRANSITION_LINES = ['run 00  ok 000000', 'failed 0000  00.0/min'];

/** The static assets, by exact URL path: the table is the only way to a file. */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/assets/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/assets/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

/**
 * Where the assets are: beside this module (src/net/observe/web from the sources,
 * dist/net/observe/web once built: the build copies them), or, from the bundle (dist/bundle/*.cjs),
 * at ../net/observe/web. The first of the two that holds the page is the one.
 */
const WEB_DIRS = [new URL('./web/', import.meta.url), new URL('../net/observe/web/', import.meta.url)];
function webDir(): URL {
  return WEB_DIRS.find((d) => fs.existsSync(new URL('index.html', d))) ?? WEB_DIRS[0]!;
}

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

function loadAssets(): Map<string, { body: Buffer; type: string }> {
  const out = new Map<string, { body: Buffer; type: string }>();
  const dir = webDir();
  for (const [route, a] of Object.entries(ASSETS)) out.set(route, { body: fs.readFileSync(new URL(a.file, dir)), type: a.type });
  return out;
}

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

/** How long a client refused an event stream is asked to wait before it tries again, s. */
const STREAM_RETRY_AFTER_S = 10;

/** ServeOptions' values that no server can have: a NetRequestError (bad input) that says which. */
function checkServeOptions(options: ServeOptions): void {
  const max = options.maxStreams;
  if (max !== undefined && !(Number.isSafeInteger(max) && max >= 1))
    throw new NetRequestError(`invalid maxStreams ${String(max)}: give a whole number of at least 1`);
  for (const name of options.allowHosts ?? []) {
    const bad = badAllowedHost(name);
    if (bad) throw new NetRequestError(`invalid allowed host: ${bad}`);
  }
}

/**
 * Serve a net's status page, its figures and its drawing over HTTP. One function (about 150 lines)
 * on purpose: the server's state (the clients, the last page sent, the poll and heartbeat timers)
 * lives in closures that the request handler and the returned NetServer's close() share.
 */
export async function serveNet(whole: NetModel, options: ServeOptions = {}): Promise<NetServer> {
  checkServeOptions(options);
  const log = options.logger ?? silentLogger;
  const streams = new StreamCap(options.maxStreams ?? 64, log);
  // Set once the server listens (its address is a name it answers to); no request comes before.
  let hostAllowed: (header: string | undefined) => boolean = () => false;
  const netHost = options.netHost;
  const net = netHost === undefined ? whole : hostView(whole, netHost);
  // NNCP's spool is asked at most every 10 s (a subprocess), not at every poll.
  const spools = new NncpSpoolReader(10_000);
  const report = (): Promise<NetStatusReport> => (netHost === undefined ? netStatus(net) : hostStatus(whole, netHost, net, spools));
  const pollMs = options.pollMs ?? 300;
  const assets = loadAssets();
  const svgText = await serveSvg(net);
  const svg = Buffer.from(svgText);
  const template = assets.get('/')!.body.toString('utf8');
  const clients = new Set<http.ServerResponse>();
  let last = '';
  let lastSent = 0;
  let polling = false;
  let timer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;

  const status = async (): Promise<string> => pageJson(await report());

  const tick = async () => {
    if (polling || clients.size === 0) return;
    polling = true;
    try {
      const json = await status();
      const now = Date.now();
      // Ages change all the time; anything else is sent at once, ages at least once a second.
      const shape = json.replace(/"(oldestAgeMs|sinceLastFiredMs|at)":[0-9.e+-]+/g, '');
      if (shape !== last || now - lastSent >= 1000) {
        last = shape;
        lastSent = now;
        for (const c of clients) c.write(`data: ${json}\n\n`);
      }
    } catch (err) {
      log.warn('net', `serve: cannot read the net's state: ${(err as Error).message}`);
    } finally {
      polling = false;
    }
  };

  const send = (res: http.ServerResponse, head: boolean, code: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) => {
    const buf = typeof body === 'string' ? Buffer.from(body) : body;
    res.writeHead(code, { ...SECURITY_HEADERS, 'Content-Type': type, 'Content-Length': String(buf.length), ...extra });
    res.end(head ? undefined : buf);
  };
  const notFound = (res: http.ServerResponse, head: boolean) => send(res, head, 404, 'text/plain; charset=utf-8', 'not found\n');
  const json = (res: http.ServerResponse, head: boolean, value: unknown) =>
    send(res, head, 200, 'application/json; charset=utf-8', `${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}\n`);

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const method = req.method ?? '';
    if (!hostAllowed(req.headers.host)) return send(res, method === 'HEAD', 421, 'text/plain; charset=utf-8', MISDIRECTED, { Connection: 'close' });
    if (method !== 'GET' && method !== 'HEAD') {
      send(res, false, 405, 'text/plain; charset=utf-8', 'method not allowed: this page only reads\n', { Allow: 'GET, HEAD' });
      return;
    }
    const head = method === 'HEAD';
    const target = req.url ?? '';
    if (!target.startsWith('/')) {
      send(res, head, 400, 'text/plain; charset=utf-8', 'bad request\n');
      return;
    }
    // The path as sent, without its query: never decoded or normalised before the table lookup,
    // so /../x, %2e%2e%2f and their double encodings are simply names that are not in it.
    const route = target.split('?')[0]!;
    const asset = assets.get(route);
    if (asset?.type.startsWith('text/html')) return send(res, head, 200, asset.type, renderPage(template, svgText, await report()));
    if (asset) return send(res, head, 200, asset.type, asset.body);
    if (route === '/net.svg') return send(res, head, 200, 'image/svg+xml; charset=utf-8', svg);
    if (route === '/metrics') return send(res, head, 200, PROMETHEUS_CONTENT_TYPE, netMetricsText(await report()));
    if (route === '/api/status') return send(res, head, 200, 'application/json; charset=utf-8', `${await status()}\n`);
    if (route === '/api/events') {
      // The place is taken before the first await, so that a burst of requests can't all pass the
      // cap while the first figures are computed; it is given back when the stream closes, however.
      const release = streams.take();
      if (!release) {
        const busy = `too many event streams open (${streams.max}); try again later\n`;
        return send(res, head, 503, 'text/plain; charset=utf-8', busy, { 'Retry-After': String(STREAM_RETRY_AFTER_S), Connection: 'close' });
      }
      res.on('close', () => {
        clients.delete(res);
        release();
      });
      res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'keep-alive' });
      if (head) return void res.end();
      const first = await status();
      if (res.destroyed || res.writableEnded) return;
      res.write(`retry: 1000\ndata: ${first}\n\n`);
      clients.add(res);
      return;
    }
    const m = /^\/api\/(place|transition)\/([^/]+)$/.exec(route);
    if (m) {
      let name: string;
      try {
        name = decodeURIComponent(m[2]!);
      } catch {
        return send(res, head, 400, 'text/plain; charset=utf-8', 'bad request\n');
      }
      if (m[1] === 'place') {
        if (!net.places.has(name)) return notFound(res, head);
        return json(res, head, { place: name, ...(await placeTokens(net, name, { limit: 200 })) });
      }
      if (!net.transitions.has(name)) return notFound(res, head);
      return json(res, head, { transition: name, ...transitionDetail(net, name) });
    }
    return notFound(res, head);
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      log.warn('net', `serve: ${req.method} ${req.url}: ${(err as Error).message}`);
      if (!res.headersSent) send(res, false, 500, 'text/plain; charset=utf-8', 'internal error\n');
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8484, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  timer = setInterval(() => void tick(), pollMs);
  heartbeat = setInterval(() => {
    for (const c of clients) c.write(': keep-alive\n\n');
  }, 15_000);
  const addr = server.address() as AddressInfo;
  hostAllowed = hostCheck({ host: options.host ?? '127.0.0.1', address: addr.address }, options.allowHosts);
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}/`,
    port: addr.port,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(timer);
        clearInterval(heartbeat);
        streams.close();
        for (const c of clients) c.end();
        clients.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
