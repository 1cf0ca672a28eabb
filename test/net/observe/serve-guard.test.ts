/**
 * net serve answers only to its own names, and keeps only so many event streams open: a request
 * naming another host (DNS rebinding) gets 421 on every path; localhost, 127.0.0.1 and the names
 * given with --allow-host (allowHosts) are served; 2,000 event streams opened at once get exactly
 * maxStreams 200s and 503s with Retry-After for the rest, logged in a line or two, while
 * /api/status answers at once; closed streams give their places back. Every connection is to
 * 127.0.0.1: the other names are only ever written into the Host header.
 */
import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { createLogger } from '../../../src/base/log.js';
import { type NetServer, type ServeOptions, serveNet } from '../../../src/net/observe/serve.js';
import { lineOf, makeNet, runFspl, spawnFspl } from '../helpers.js';

const NET = 'places: { inbox: {}, done: {} }\ntransitions: { move: { in: inbox, out: done, run: [cat] } }\n';

const servers: NetServer[] = [];
const sockets = new Set<net.Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  for (const s of servers.splice(0)) await s.close();
});

async function start(options: ServeOptions = {}) {
  const n = makeNet(NET);
  const server = await serveNet(n.net.model, { port: 0, pollMs: 100, ...options });
  servers.push(server);
  return { ...n, server };
}

/** GET (or HEAD) `target` from 127.0.0.1 with the Host header given (none: node's own, 127.0.0.1:PORT). */
function get(
  port: number,
  target: string,
  host?: string,
  method = 'GET',
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: target, headers: host === undefined ? {} : { host }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        // An event stream never ends: its status and first bytes are enough.
        res.on('data', (d) => {
          body += d;
          if (target === '/api/events') {
            resolve({ status: res.statusCode!, headers: res.headers, body });
            req.destroy();
          }
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Start an event stream on a raw socket: `connected` when the socket is, `answer` the status of
 * the server's answer and the socket (left open, for the caller to close; a refused one is closed
 * here). The request is sent once connected, or only when `go` resolves if given.
 */
function startStream(port: number, go?: Promise<void>) {
  const socket = net.connect({ host: '127.0.0.1', port });
  sockets.add(socket);
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const answer = new Promise<{ status: number; socket: net.Socket }>((resolve, reject) => {
    let head = '';
    socket.setEncoding('utf8');
    socket.on('error', reject);
    socket.on('data', (d) => {
      head += d;
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(head);
      if (!m) return;
      socket.removeAllListeners('data');
      const status = Number(m[1]);
      if (status !== 200) {
        socket.destroy();
        sockets.delete(socket);
      }
      resolve({ status, socket });
    });
  });
  const request = `GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
  void (go ?? connected).then(() => socket.write(request));
  return { connected, answer };
}

const openStream = (port: number) => startStream(port).answer;

/**
 * `n` event streams whose requests are sent all at once, once every socket is connected: they
 * reach the server together, as a burst does, and race for the places.
 */
async function streamsAtOnce(port: number, n: number) {
  let go: () => void = () => {};
  const ready = new Promise<void>((r) => (go = r));
  const started = Array.from({ length: n }, () => startStream(port, ready));
  await Promise.all(started.map((s) => s.connected));
  go();
  return Promise.all(started.map((s) => s.answer));
}

describe('net serve answers only to its own names', () => {
  test.each(['/', '/api/status', '/api/events', '/metrics', '/api/place/inbox', '/assets/app.js', '/nosuch'])(
    'a foreign Host on %s: 421, a short plain-text body, nothing of the net',
    async (target) => {
      const { server, net: n } = await start();
      await n.put('inbox', Buffer.from('x'), { key: 'secret-key' });
      for (const host of [
        `evil.example:${server.port}`,
        'evil.example',
        `localhost.evil.example:${server.port}`,
        `127.0.0.1.evil.example`,
        `x@127.0.0.1:${server.port}`,
      ]) {
        const r = await get(server.port, target, host);
        expect([r.status, r.headers['content-type']], host).toEqual([421, 'text/plain; charset=utf-8']);
        expect(r.body).toContain('--allow-host');
        expect(r.body.split('\n')).toHaveLength(2);
        expect(r.body).not.toContain('secret-key');
        expect(r.body).not.toContain('inbox');
      }
    },
  );

  test(
    'its address, localhost and the loopback names, in any case ' +
      'and with a trailing dot, with or without a port: served',
    async () => {
      const { server } = await start();
      const p = server.port;
      for (const host of [
        `127.0.0.1:${p}`,
        `localhost:${p}`,
        `LocalHost.:${p}`,
        'localhost',
        '127.0.0.1',
        `[::1]:${p}`,
        'localhost:9000',
      ]) {
        expect((await get(p, '/api/status', host)).status, host).toBe(200);
      }
      const events = await get(p, '/api/events', `localhost:${p}`);
      expect(events.status).toBe(200);
      expect(events.body).toContain('data: {');
    },
  );

  test('a request without a Host header (HTTP/1.0) is refused too', async () => {
    const { server } = await start();
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect({ host: '127.0.0.1', port: server.port });
      sockets.add(s);
      let text = '';
      s.setEncoding('utf8');
      s.on('data', (d) => (text += d));
      s.on('end', () => resolve(text));
      s.on('error', reject);
      s.write('GET /api/status HTTP/1.0\r\n\r\n');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 421 /);
    expect(answer).not.toContain('"places"');
  });

  test('names given in allowHosts are served (any case, trailing dot); others still are not', async () => {
    const { server } = await start({ allowHosts: ['Fspl.Test.', 'nets.example'] });
    const p = server.port;
    for (const host of [`fspl.test:${p}`, `FSPL.TEST.:${p}`, `nets.example:${p}`])
      expect((await get(p, '/', host)).status, host).toBe(200);
    expect((await get(p, '/', `evil.example:${p}`)).status).toBe(421);
    expect((await get(p, '/', `test:${p}`)).status).toBe(421);
  });

  test('bound to every address, only the loopback names and the allowed ones pass', async () => {
    // Bound to 0.0.0.0 but reached at 127.0.0.1 only: the wildcard is no name a browser uses.
    const { server } = await start({ host: '0.0.0.0', allowHosts: ['fspl.test'] });
    const p = server.port;
    expect((await get(p, '/', `0.0.0.0:${p}`)).status).toBe(421);
    expect((await get(p, '/', `evil.example:${p}`)).status).toBe(421);
    for (const host of [`localhost:${p}`, `127.0.0.1:${p}`, `fspl.test:${p}`])
      expect((await get(p, '/', host)).status, host).toBe(200);
  });

  test('a bad allowHosts name or maxStreams is refused before anything listens', async () => {
    const { net: n } = makeNet(NET);
    await expect(serveNet(n.model, { port: 0, allowHosts: ['fspl.test:80'] })).rejects.toThrow(
      /not a host name or an IP address/,
    );
    await expect(serveNet(n.model, { port: 0, allowHosts: ['http://fspl.test'] })).rejects.toThrow(/not a host name/);
    await expect(serveNet(n.model, { port: 0, maxStreams: 0 })).rejects.toThrow(/invalid maxStreams 0/);
    await expect(serveNet(n.model, { port: 0, maxStreams: 1.5 })).rejects.toThrow(/invalid maxStreams/);
  });
});

describe('net serve keeps only so many event streams open', () => {
  test('2,000 at once: exactly maxStreams served, the rest 503 with ' +
    'Retry-After, logged once per burst; /api/status answers meanwhile', async () => {
    const lines: string[] = [];
    const { server } = await start({ maxStreams: 64, logger: createLogger('warn', (l) => lines.push(l)) });
    const p = server.port;
    const open: net.Socket[] = [];
    let refused = 0;
    const statusTimes: number[] = [];
    const timeStatus = async () => {
      const t0 = performance.now();
      const r = await get(p, '/api/status');
      statusTimes.push(performance.now() - t0);
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body).places).toHaveLength(2);
    };
    // In waves of 250, so that the client side never holds more than a few hundred descriptors.
    for (let wave = 0; wave < 8; wave++) {
      const [answers] = await Promise.all([streamsAtOnce(p, 250), wave === 4 ? timeStatus() : undefined]);
      for (const a of answers) {
        if (a.status === 200) open.push(a.socket);
        else {
          expect(a.status).toBe(503);
          refused++;
        }
      }
    }
    expect(open).toHaveLength(64);
    expect(refused).toBe(2000 - 64);
    await timeStatus();
    // Not starved by the open streams (which stay open): a bound for a hang, not a timing (a loaded CI took 1.2 s).
    expect(Math.max(...statusTimes)).toBeLessThan(10_000);

    const busy = await get(p, '/api/events');
    expect([busy.status, busy.headers['retry-after']]).toEqual([503, '10']);
    expect(busy.body).toContain('too many event streams');
    // One line at the first refusal; the rest are counted for the next.
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/WARN fspl::net: serve: refused 1 event stream \(503\): 64 already open/);

    // Closed by their clients, the streams give their places back.
    for (const s of open) s.destroy();
    refused++; // busy
    const deadline = Date.now() + 5000;
    let again = await openStream(p);
    while (again.status !== 200 && Date.now() < deadline) {
      refused++;
      await new Promise((r) => setTimeout(r, 20));
      again = await openStream(p);
    }
    expect(again.status).toBe(200);
    const more = await streamsAtOnce(p, 63);
    expect(more.filter((a) => a.status === 200)).toHaveLength(63);
    expect((await openStream(p)).status).toBe(503);
    refused++;

    // Closing the server ends the streams and says what the log had not said yet: every refusal
    // is counted once, in at most two lines (the burst's first, and the rest).
    const ended = [again, ...more].map((a) => new Promise((r) => a.socket.once('close', r)));
    await servers.pop()!.close();
    await Promise.all(ended);
    expect(lines.length).toBeLessThanOrEqual(2);
    const counted = lines.map((l) => Number(/refused (\d+)/.exec(l)![1]));
    expect(counted.reduce((a, b) => a + b, 0)).toBe(refused);
  }, 30_000);
});

describe('fspl net serve --allow-host, --max-streams', () => {
  test('are parsed and passed on: the allowed name is served, the second stream refused', async () => {
    const { file } = makeNet(NET);
    const serve = spawnFspl([
      'net',
      'serve',
      file,
      '--port',
      '0',
      '--allow-host',
      'fspl.test',
      '--allow-host',
      'other.test',
      '--max-streams',
      '1',
    ]);
    const [, port] = await lineOf(serve, /at http:\/\/127\.0\.0\.1:(\d+)\//);
    const p = Number(port);
    expect((await get(p, '/', `fspl.test:${p}`)).status).toBe(200);
    expect((await get(p, '/', `other.test:${p}`)).status).toBe(200);
    expect((await get(p, '/', `evil.example:${p}`)).status).toBe(421);
    expect((await openStream(p)).status).toBe(200);
    expect((await openStream(p)).status).toBe(503);
    const exited = new Promise((r) => serve.once('exit', r));
    serve.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  test.each([
    [['--max-streams', '0'], "error: invalid --max-streams '0': give a whole number of at least 1\n"],
    [['--max-streams', 'abc'], "error: invalid --max-streams 'abc': give a whole number of at least 1\n"],
    [['--max-streams', '1e3'], "error: invalid --max-streams '1e3': give a whole number of at least 1\n"],
    [
      ['--allow-host', 'fspl.test:8484'],
      "Error: invalid allowed host: 'fspl.test:8484' is not a host name " +
        'or an IP address (give the name alone, without a port or scheme)\n',
    ],
  ])('%j: one line, exit 2, nothing served', async (bad, message) => {
    const { file } = makeNet(NET);
    const r = await runFspl(['net', 'serve', file, '--port', '0', ...bad]);
    expect([r.status, r.stdout, r.stderr]).toEqual([2, '', message]);
  });
});
