/**
 * net serve without a browser: the page and its API over raw HTTP. Only GET and HEAD; no file but
 * its own assets, whatever the path's encoding; names and params reach the page as JSON only;
 * /metrics is valid Prometheus text; vanished directories and a stopped run are shown, not fatal.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { type NetServer, serveNet } from '../../../src/net/observe/serve.js';
import { parseExposition } from '../../web/prometheus-reader.js';
import { makeNet } from '../helpers.js';

const NET = `
places:
  inbox: {}
  done: {}
transitions:
  move:
    in: inbox
    out: done
    run: [cat]
`;

const servers: NetServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function start() {
  const n = makeNet(NET);
  const server = await serveNet(n.net.model, { port: 0, pollMs: 100 });
  servers.push(server);
  return { ...n, server };
}

/** A request with the path sent exactly as given (no normalisation, as a hostile client would). */
function raw(
  server: NetServer,
  method: string,
  target: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, method, path: target }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('net serve over HTTP', () => {
  test('binds to 127.0.0.1 and serves the page, its assets, the drawing and the status', async () => {
    const { server } = await start();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await raw(server, 'GET', '/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.body).toContain('/assets/app.js');
    // The page carries its drawing and the figures of now: its first paint needs no other request.
    expect(page.body).toMatch(
      /<section id="drawing" aria-label="The net"><svg [\s\S]*id="place&#45;inbox"[\s\S]*<\/svg><\/section>/,
    );
    const served = JSON.parse(/<script type="application\/json" id="state">([^<]*)<\/script>/.exec(page.body)![1]!);
    expect(served.places.map((p: { name: string }) => p.name)).toEqual(['inbox', 'done']);
    expect(served.state).toBe('drained');
    expect((await raw(server, 'GET', '/assets/app.js')).status).toBe(200);
    expect((await raw(server, 'GET', '/assets/app.css')).headers['content-type']).toMatch(/^text\/css/);
    // The style both pages share (src/web/assets/base.css), linked before the page's own.
    expect(page.body).toMatch(/href="\/assets\/base.css">\n<link rel="stylesheet" href="\/assets\/app.css">/);
    expect((await raw(server, 'GET', '/assets/base.css')).body).toContain('font-family');
    const svg = await raw(server, 'GET', '/net.svg');
    expect(svg.body).toContain('id="place&#45;inbox"');
    expect(svg.body).toContain('id="transition&#45;move"');
    const status = JSON.parse((await raw(server, 'GET', '/api/status?x=1')).body);
    expect(status.places.map((p: { name: string }) => p.name)).toEqual(['inbox', 'done']);
    const head = await raw(server, 'HEAD', '/');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  test.each([
    '/../../etc/passwd',
    '/../../../../../../etc/passwd',
    '/%2e%2e/%2e%2e/etc/passwd',
    '/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '/%252e%252e%252fetc%252fpasswd',
    '/..%2f..%2f..%2fetc%2fpasswd',
    '/assets/../../../etc/passwd',
    '/assets/..%2f..%2f..%2fpackage.json',
    '/assets/%2e%2e%2fserve.ts',
    '/assets/app.js/../../../../etc/passwd',
    '/assets/',
    '/assets/index.html',
    '/web/app.js',
    '//etc/passwd',
    '/etc/passwd',
    '/net.svg%00.html',
    '/api/place/..%2f..%2fetc%2fpasswd',
    '/api/place/%2e%2e',
    '/api/transition/..',
    '/api/place/nosuch',
    '/api/place/inbox/extra',
  ])('GET %s: 404, no file served', async (target) => {
    const { server } = await start();
    const r = await raw(server, 'GET', target);
    expect(r.status).toBe(404);
    expect(r.body).not.toContain('root:');
    expect(r.body).not.toContain('"name"');
  });

  test('a request target that is not a path, or a name that is not UTF-8: 400', async () => {
    const { server } = await start();
    expect((await raw(server, 'GET', 'http://127.0.0.1/etc/passwd')).status).toBe(400);
    expect((await raw(server, 'GET', '/api/place/%ff%fe')).status).toBe(400);
  });

  test.each(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND'])(
    '%s: 405, nothing changes',
    async (method) => {
      const { server, dir } = await start();
      const before = fs.readdirSync(path.join(dir, 'places', 'inbox', 'jobs'));
      for (const target of ['/', '/api/place/inbox', '/metrics', '/api/events']) {
        const r = await raw(server, method, target);
        expect(r.status).toBe(405);
        expect(r.headers.allow).toBe('GET, HEAD');
      }
      expect(fs.readdirSync(path.join(dir, 'places', 'inbox', 'jobs'))).toEqual(before);
    },
  );

  test('keys and params holding HTML and script come back as JSON strings, never as a page', async () => {
    const { server, net } = await start();
    const key = '<script>alert("key")</script>';
    const param = '<img src=x onerror=alert(1)>&amp;"\'';
    await net.put('inbox', Buffer.from('x'), { key, params: [param, 'plain'] });
    const r = await raw(server, 'GET', '/api/place/inbox');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    const j = JSON.parse(r.body);
    expect(j.tokens).toHaveLength(1);
    expect(j.tokens[0]).toMatchObject({ seq: '1', key, params: [param, 'plain'], nop: false });
    // The page carries the figures of now, this key among them (waiting for the paused move), as
    // JSON in a data block whose every < is escaped: nothing from the net ends it or opens markup.
    net.pause('move', { reason: '</script><script>alert("reason")</script>', by: 'tester' });
    const page = (await raw(server, 'GET', '/')).body;
    expect(page).not.toContain('<script>alert');
    expect(page.match(/<\/script>/gi)).toHaveLength(2); // app.js's and the data block's
    const served = JSON.parse(/<script type="application\/json" id="state">([^<]*)<\/script>/.exec(page)![1]!);
    expect(served.waiting.map((l: { key: string }) => l.key)).toEqual([key]);
    expect(served.transitions[0].paused.reason).toBe('</script><script>alert("reason")</script>');
  });

  test('an error token lists its RETRIED count and where it failed', async () => {
    const { server, net } = await start();
    await net.put('done', Buffer.from('x'), {
      key: 'e',
      env: { ERROR_TRANSITION: 'finish', ERROR_REASON: 'exited with status 1', RETRIED: '2' },
    });
    const j = JSON.parse((await raw(server, 'GET', '/api/place/done')).body);
    expect(j.tokens[0]).toMatchObject({
      key: 'e',
      retried: 2,
      error: { transition: 'finish', reason: 'exited with status 1' },
    });
  });

  test('/metrics parses as Prometheus text with the places and transitions', async () => {
    const { server, net } = await start();
    await net.put('inbox', Buffer.from('x'));
    const r = await raw(server, 'GET', '/metrics');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const families = parseExposition(r.body);
    const tokens = families.find((f) => f.name === 'fspl_net_place_tokens')!;
    expect(tokens.samples).toEqual([
      { name: 'fspl_net_place_tokens', labels: [['place', 'inbox']], value: '1' },
      { name: 'fspl_net_place_tokens', labels: [['place', 'done']], value: '0' },
    ]);
    expect(families.find((f) => f.name === 'fspl_net_live')!.samples[0]!.value).toBe('0');
  });

  test('the event stream sends the status, and again when a place changes', async () => {
    const { server, net } = await start();
    const events: Array<{ places: Array<{ name: string; tokens: number }> }> = [];
    let got: () => void = () => {};
    const req = http.get({ host: '127.0.0.1', port: server.port, path: '/api/events' }, (res) => {
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buf += d;
        for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
          const chunk = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = chunk.split('\n').find((l) => l.startsWith('data: '));
          if (data) events.push(JSON.parse(data.slice(6)));
          got();
        }
      });
    });
    const until = async (pred: () => boolean) => {
      while (!pred()) await new Promise<void>((r) => (got = r));
    };
    try {
      await until(() => events.length > 0);
      expect(events[0]!.places.find((p) => p.name === 'inbox')!.tokens).toBe(0);
      await net.put('inbox', Buffer.from('x'));
      await until(() => events.some((e) => e.places.find((p) => p.name === 'inbox')!.tokens === 1));
    } finally {
      req.destroy();
    }
  });

  test('vanished directories and a missing state are shown, not fatal', async () => {
    const { server, dir } = await start();
    fs.rmSync(path.join(dir, 'places', 'done'), { recursive: true });
    fs.rmSync(path.join(dir, 'net.state'), { recursive: true, force: true });
    const status = JSON.parse((await raw(server, 'GET', '/api/status')).body);
    const done = status.places.find((p: { name: string }) => p.name === 'done');
    expect(done).toMatchObject({ exists: false, tokens: 0 });
    expect(done.problem).toContain('no queue');
    expect(status.live).toBe(false);
    const place = JSON.parse((await raw(server, 'GET', '/api/place/done')).body);
    expect(place).toMatchObject({ total: 0, tokens: [] });
    expect(place.problem).toContain('no queue');
    expect((await raw(server, 'GET', '/api/transition/move')).status).toBe(200);
    expect((await raw(server, 'GET', '/metrics')).body).toContain('fspl_net_place_present{place="done"} 0');
    expect((await raw(server, 'GET', '/')).status).toBe(200);
  });
});
