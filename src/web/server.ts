/**
 * The server of fspl's read-only pages (`net serve`, and `queue-process --watch --listen`): a
 * request is hostile input (docs/security.md), so every page gets the same guards from here.
 *
 * It binds to 127.0.0.1 unless told otherwise; only GET and HEAD are answered (405 otherwise); a
 * request whose Host header is not one of its names (host-check.ts) gets 421 on every path, so
 * that DNS rebinding cannot read a page through the operator's browser; static files are looked
 * up by exact path in the page's table (never by joining a path from the URL); every answer
 * carries a Content Security Policy that forbids inline scripts; and at most maxStreams event
 * streams are open at once (stream-cap.ts), the rest refused with 503 and Retry-After. The page
 * itself says what its paths answer (PageRoutes) and what its event stream sends.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Logger, silentLogger } from '../base/log.js';
import { badAllowedHost, hostCheck, MISDIRECTED } from './host-check.js';
import { StreamCap } from './stream-cap.js';

/** Where a page server listens and whom it answers. */
export interface ListenOptions {
  /** Port (0 picks a free one). */
  port?: number;
  /** Address to bind (default 127.0.0.1). */
  host?: string;
  /**
   * Names (host names or IP addresses, without a port) the server answers to besides its own
   * address, localhost and the loopback addresses: the names a browser reaches it by. Bound to
   * every address (0.0.0.0 or ::), these are the only names it answers to but the loopback ones.
   */
  allowHosts?: readonly string[];
  /** Event streams open at once; more are refused with 503 (default 64). */
  maxStreams?: number;
  /** How often the event stream's figures are recomputed while a page watches, ms (default 300). */
  pollMs?: number;
  logger?: Logger;
}

/** An answer: its status, type and body. */
export interface Reply {
  status?: number;
  type: string;
  body: string | Buffer;
  headers?: Record<string, string>;
}

/** What a page serves. */
export interface PageRoutes {
  /** The log's target and the server's name in its lines ('net', 'serve'); the option that sets maxStreams. */
  readonly log: { target: string; name: string; option?: string };
  /** The answer to GET `route` (the path as sent, without its query), or undefined: 404. */
  answer(route: string): Promise<Reply | undefined>;
  /** The path of the event stream, and the figures it sends (one JSON text) as they are now. */
  readonly eventsPath: string;
  events(): Promise<string>;
  /** What of the figures counts as a change worth sending at once (default: all); the rest goes once a second. */
  shape?(json: string): string;
}

export interface PageServer {
  /** The page's address, e.g. http://127.0.0.1:8484/ */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src " +
    "'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; " +
    "frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

export const TEXT = 'text/plain; charset=utf-8';
export const JSON_TYPE = 'application/json; charset=utf-8';

/** How long a client refused an event stream is asked to wait before it tries again, s. */
const STREAM_RETRY_AFTER_S = 10;

/**
 * Why ListenOptions can give no server (a bad maxStreams or allowed host), or undefined. The
 * caller throws it as its own kind of bad input.
 */
export function badListenOptions(options: ListenOptions): string | undefined {
  const max = options.maxStreams;
  if (max !== undefined && !(Number.isSafeInteger(max) && max >= 1))
    return `invalid maxStreams ${String(max)}: give a whole number of at least 1`;
  for (const name of options.allowHosts ?? []) {
    const bad = badAllowedHost(name);
    if (bad) return `invalid allowed host: ${bad}`;
  }
  return undefined;
}

/** The live figures: sent to every open stream when they change, and at least once a second. */
class EventClients {
  readonly clients = new Set<http.ServerResponse>();
  private last = '';
  private lastSent = 0;
  private polling = false;

  constructor(
    private readonly routes: PageRoutes,
    private readonly log: Logger,
  ) {}

  async tick(): Promise<void> {
    if (this.polling || this.clients.size === 0) return;
    this.polling = true;
    try {
      const json = await this.routes.events();
      const now = Date.now();
      const shape = this.routes.shape ? this.routes.shape(json) : json;
      if (shape !== this.last || now - this.lastSent >= 1000) {
        this.last = shape;
        this.lastSent = now;
        for (const c of this.clients) c.write(`data: ${json}\n\n`);
      }
    } catch (err) {
      this.log.warn(
        this.routes.log.target,
        `${this.routes.log.name}: cannot read the figures: ${(err as Error).message}`,
      );
    } finally {
      this.polling = false;
    }
  }

  close(): void {
    for (const c of this.clients) c.end();
    this.clients.clear();
  }
}

function send(res: http.ServerResponse, head: boolean, reply: Reply): void {
  const buf = typeof reply.body === 'string' ? Buffer.from(reply.body) : reply.body;
  res.writeHead(reply.status ?? 200, {
    ...SECURITY_HEADERS,
    'Content-Type': reply.type,
    'Content-Length': String(buf.length),
    ...reply.headers,
  });
  res.end(head ? undefined : buf);
}

/** An event stream opened: its first figures, then each change (EventClients), within the cap. */
async function openEventStream(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  head: boolean,
  routes: PageRoutes,
  streams: StreamCap,
  events: EventClients,
): Promise<void> {
  // The place is taken before the first await, so that a burst of requests can't all pass the
  // cap while the first figures are computed; it is given back when the stream closes, however.
  const release = streams.take();
  if (!release) {
    const busy = `too many event streams open (${streams.max}); try again later\n`;
    return send(res, head, {
      status: 503,
      type: TEXT,
      body: busy,
      headers: { 'Retry-After': String(STREAM_RETRY_AFTER_S), Connection: 'close' },
    });
  }
  res.on('close', () => {
    events.clients.delete(res);
    release();
  });
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'Content-Type': 'text/event-stream; charset=utf-8',
    Connection: 'keep-alive',
  });
  if (head) return void res.end();
  const first = await routes.events();
  if (res.destroyed || res.writableEnded || req.destroyed) return;
  res.write(`retry: 1000\ndata: ${first}\n\n`);
  events.clients.add(res);
}

/**
 * Serve a page (routes) over HTTP with the guards above; resolves once it listens. Throws a
 * RangeError for options no server can have (badListenOptions says which), and what listen
 * throws (EADDRINUSE...).
 */
export async function servePage(routes: PageRoutes, options: ListenOptions = {}): Promise<PageServer> {
  const bad = badListenOptions(options);
  if (bad) throw new RangeError(bad);
  const log = options.logger ?? silentLogger;
  const streams = new StreamCap(options.maxStreams ?? 64, log, routes.log);
  const events = new EventClients(routes, log);
  // Set once the server listens (its address is a name it answers to); no request comes before.
  let hostAllowed: (header: string | undefined) => boolean = () => false;

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const method = req.method ?? '';
    const head = method === 'HEAD';
    if (!hostAllowed(req.headers.host))
      return send(res, head, { status: 421, type: TEXT, body: MISDIRECTED, headers: { Connection: 'close' } });
    if (method !== 'GET' && !head)
      return send(res, false, {
        status: 405,
        type: TEXT,
        body: 'method not allowed: this page only reads\n',
        headers: { Allow: 'GET, HEAD' },
      });
    const target = req.url ?? '';
    if (!target.startsWith('/')) return send(res, head, { status: 400, type: TEXT, body: 'bad request\n' });
    // The path as sent, without its query: never decoded or normalised before the lookup, so
    // /../x, %2e%2e%2f and their double encodings are simply names that are not in it.
    const route = target.split('?')[0]!;
    if (route === routes.eventsPath) return openEventStream(req, res, head, routes, streams, events);
    const reply = await routes.answer(route);
    return send(res, head, reply ?? { status: 404, type: TEXT, body: 'not found\n' });
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      log.warn(routes.log.target, `${routes.log.name}: ${req.method} ${req.url}: ${(err as Error).message}`);
      if (!res.headersSent) send(res, false, { status: 500, type: TEXT, body: 'internal error\n' });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const timer = setInterval(() => void events.tick(), options.pollMs ?? 300);
  const heartbeat = setInterval(() => {
    for (const c of events.clients) c.write(': keep-alive\n\n');
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
        events.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
