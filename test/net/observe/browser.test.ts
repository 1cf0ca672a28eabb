/**
 * The net serve page in a real browser: Debian's chromium driven by playwright-core. It starts
 * `fspl net run` and `fspl net serve` on a small net, opens the page, and checks that the drawing
 * is complete, that counts change live (no reload), that clicking a place lists its tokens (a key
 * holding HTML shows as text and runs nothing), and that a failing command is shown with its
 * stderr. FSPL_SCREENSHOT=FILE keeps the screenshot (docs/net-serve.png was made so).
 */

import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeIfPresent } from '../../gate.js';
import { CHROMIUM, hasChromium, launchChromium } from '../../web/chromium.js';
import { lineOf, makeNet, netDir, runFspl, spawnFspl } from '../helpers.js';

const NET = `
places:
  inbox: {}
  work: {}
  done: {}
  failed: {}
transitions:
  prep:
    in: inbox
    out: work
    run: [cat]
  finish:
    in: work
    out: done
    run: 'if grep -q bad; then echo "boom: <script>window.pwned=1</script>" >&2; exit 1; fi; echo finished'
    error: failed
`;

describeIfPresent(
  'net serve in a browser',
  hasChromium ? [] : [`chromium (${CHROMIUM})`],
  { what: 'browser test', note: 'apt-get install -y chromium' },
  () => {
    test('the page draws the net, follows it live, lists tokens and shows failures', { timeout: 120_000 }, async () => {
      const { file, net } = makeNet(NET);
      const run = spawnFspl(['net', 'run', file]);
      const serve = spawnFspl(['net', 'serve', file, '--port', '0']);
      const [, url] = await lineOf(serve, /at (http:\/\/127\.0\.0\.1:\d+\/)/);
      const { browser, profile } = await launchChromium({ width: 1280, height: 900 });
      try {
        const page = browser.pages()[0] ?? (await browser.newPage());
        const dialogs: string[] = [];
        page.on('dialog', (d) => {
          dialogs.push(d.message());
          void d.dismiss();
        });
        await page.goto(url!);
        // Every place and transition is drawn.
        for (const p of net.model.places.keys()) await page.locator(`svg g#place-${p}`).waitFor();
        for (const t of net.model.transitions.keys()) await page.locator(`svg g#transition-${t}`).waitFor();
        await page.waitForFunction(() => document.querySelector('#banner')?.textContent?.includes('net run pid'));
        expect(await page.locator('#place-inbox text').first().textContent()).toBe('inbox');

        // Live: tokens put now show up without a reload, within 2 s.
        await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
        const key = '<img src=x onerror="window.pwned=1">';
        await net.put('done', Buffer.from('a'), { key, params: ['<b>bold</b>', '"quoted"'] });
        await net.put('done', Buffer.from('b'), { key: 'second' });
        await page.waitForFunction(
          () => document.querySelector('#place-done')?.getAttribute('data-tokens') === '2',
          undefined,
          { timeout: 2000 },
        );
        expect(await page.locator('#place-done text').nth(1).textContent()).toBe('2 tokens');
        expect(await page.evaluate(() => (window as unknown as { marker: number }).marker)).toBe(42);

        // A token through the whole net: the transitions' counts change.
        await net.put('inbox', Buffer.from('good'), { key: 'good-1' });
        await page.waitForFunction(
          () => document.querySelector('#transition-finish')?.getAttribute('data-fired') === '1',
          undefined,
          { timeout: 30_000 },
        );
        await page.waitForFunction(
          () => document.querySelector('#place-done')?.getAttribute('data-tokens') === '3',
          undefined,
          { timeout: 2000 },
        );

        // Clicking a place lists its tokens; the key and params are text, not markup.
        await page.locator('#place-done').click();
        await page.locator('#tokens').waitFor();
        const rows = page.locator('#tokens tr');
        await expect.poll(() => rows.count()).toBe(4);
        expect(await rows.nth(1).locator('td').nth(1).textContent()).toBe(key);
        expect(await rows.nth(1).locator('td').nth(3).textContent()).toBe('"<b>bold</b>" "\\"quoted\\""');
        expect(await page.locator('#detail img, #detail b').count()).toBe(0);

        // A failing command is shown: the transition highlighted, its failure and stderr listed.
        await net.put('inbox', Buffer.from('bad'), { key: 'bad-1' });
        await page.waitForFunction(
          () => document.querySelector('#transition-finish')?.classList.contains('failing'),
          undefined,
          { timeout: 30_000 },
        );
        expect(await page.locator('#transition-finish').getAttribute('data-failed')).toBe('1');
        await page.locator('#transition-finish').click();
        await page.locator('#stderr').waitFor();
        expect(await page.locator('#stderr').textContent()).toContain('boom: <script>window.pwned=1</script>');
        expect(await page.locator('#detail').textContent()).toContain('exited with status 1');
        await page.waitForFunction(
          () => document.querySelector('#place-failed')?.getAttribute('data-tokens') === '1',
          undefined,
          { timeout: 5000 },
        );

        // An error token says where it failed and how often it was retried; a paused transition says so.
        await page.locator('#place-failed').click();
        await page.waitForFunction(
          () =>
            document
              .querySelector('#tokens tr:nth-child(2) td:nth-child(6)')
              ?.textContent?.startsWith('finish: exited with status 1'),
          undefined,
          { timeout: 5000 },
        );
        expect(await page.locator('#tokens tr').first().textContent()).toBe('seqkeyageparamsretriedfailed in');
        net.pause('finish', { reason: 'look <b>here</b>', by: 'tester' });
        await page.waitForFunction(
          () => document.body.textContent?.includes('by tester: look <b>here</b>'),
          undefined,
          { timeout: 5000 },
        );
        net.resume('finish');

        // Nothing from the net ran as script.
        expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
        expect(dialogs).toEqual([]);

        const shot = await page.screenshot({ fullPage: true });
        expect(shot.subarray(1, 4).toString()).toBe('PNG');
        if (process.env.FSPL_SCREENSHOT) fs.writeFileSync(process.env.FSPL_SCREENSHOT, shot);

        // The run stops: the page says so and keeps working.
        run.kill('SIGTERM');
        await page.waitForFunction(
          () => document.querySelector('#banner')?.textContent?.includes('no net run going'),
          undefined,
          { timeout: 15_000 },
        );
        expect(await page.locator('#place-done').getAttribute('data-tokens')).toBe('3');
      } finally {
        await browser.close();
        fs.rmSync(profile, { recursive: true, force: true });
        serve.kill('SIGTERM');
        run.kill('SIGTERM');
      }
    });

    test('the first paint has the figures, before the event stream answers; ' +
      'a pause is marked, not stuck; times are "3 min ago", exact on hover', {
      timeout: 60_000,
    }, async () => {
      const { dir, file, net } = makeNet(NET);
      for (let i = 0; i < 3; i++) await net.put('inbox', Buffer.from(`t${i}`), { key: `k${i}` });
      net.pause('prep', { reason: 'codec upgrade', by: 'tester' });
      // Paused three minutes ago, as its record says (operate/pause.ts).
      const since = Date.now() - 3 * 60_000 - 5_000;
      const record = path.join(dir, 'net.state/paused/prep.json');
      fs.writeFileSync(record, JSON.stringify({ ...JSON.parse(fs.readFileSync(record, 'utf8')), since }));
      const serve = spawnFspl(['net', 'serve', file, '--port', '0']);
      const [, url] = await lineOf(serve, /at (http:\/\/127\.0\.0\.1:\d+\/)/);
      const { browser, profile } = await launchChromium({ width: 1280, height: 900 });
      try {
        const page = browser.pages()[0] ?? (await browser.newPage());
        // The event stream never answers, and no drawing comes but the page's own: what shows at
        // load is what the page was served with.
        await page.route('**/api/events', () => {});
        await page.route('**/net.svg', (r) => r.abort());
        await page.goto(url!, { waitUntil: 'load' });
        const shot = await page.screenshot({ fullPage: true });
        expect(shot.subarray(1, 4).toString()).toBe('PNG');
        if (process.env.FSPL_SCREENSHOT_FIRST) fs.writeFileSync(process.env.FSPL_SCREENSHOT_FIRST, shot);

        // Figures, not "connecting…"; and a pause alone is not stuck: no red banner.
        expect(await page.locator('#banner').textContent()).toBe(
          'idle — no net run going — 3 tokens waiting — 1 transition paused',
        );
        expect(await page.locator('#banner').getAttribute('class')).toBe('banner idle');
        expect(await page.locator('#place-inbox').getAttribute('data-tokens')).toBe('3');
        expect(await page.locator('#place-inbox text').nth(1).textContent()).toBe('3 tokens');
        expect(await page.locator('#places tbody tr').count()).toBe(4);
        expect(await page.locator('#stuck-title').isHidden()).toBe(true);

        // The paused transition is marked in the drawing, and says since when, exactly on hover.
        expect(await page.locator('#transition-prep').getAttribute('class')).toContain('paused');
        expect(await page.locator('#transition-finish').getAttribute('class')).not.toContain('paused');
        expect(await page.locator('#transition-prep text').nth(1).textContent()).toBe('paused  ok 0');
        expect(await page.locator('#transition-prep title').textContent()).toMatch(
          /^prep: paused since \d{4}-.* by tester: codec upgrade$/,
        );
        const note = page.locator('#transitions tbody tr', { hasText: /^prep/ }).locator('td').last();
        expect(await note.textContent()).toBe('paused 3 min ago by tester: codec upgrade');
        const exact = await page.evaluate((ms) => new Date(ms).toLocaleString(), since);
        expect(await note.locator('time').getAttribute('title')).toBe(exact);
        expect(await note.locator('time').getAttribute('datetime')).toBe(new Date(since).toISOString());
        expect(await page.locator('#waiting li').allTextContents()).toEqual(
          [0, 1, 2].map((i) => `inbox #${i + 1} key k${i}: held by prep, paused 3 min ago by tester: codec upgrade`),
        );
        expect(await page.locator('#waiting li time').first().getAttribute('title')).toBe(exact);

        // A firing's time too: "... ago", the exact time on hover. The stream answers from now on.
        await page.unroute('**/api/events');
        const run = spawnFspl(['net', 'run', file]);
        try {
          net.resume('prep');
          await page.reload();
          await page.waitForFunction(
            () => document.querySelector('#transition-finish')?.getAttribute('data-fired') === '3',
            undefined,
            { timeout: 30_000 },
          );
          await page.waitForFunction(() => !document.querySelector('#transition-prep')?.classList.contains('paused'));
          const fired = page
            .locator('#transitions tbody tr', { hasText: /^finish/ })
            .locator('td')
            .nth(7);
          expect(await fired.textContent()).toMatch(/^(just now|\d+ s ago)$/);
          expect(await fired.locator('time').getAttribute('title')).toBeTruthy();
          await page.locator('#transition-finish').click();
          await page.locator('#firings').waitFor();
          expect(await page.locator('#firings tr').nth(1).locator('td').first().textContent()).toMatch(
            /^(just now|\d+ s ago)$/,
          );
          expect(await page.locator('#firings tr').nth(1).locator('time').getAttribute('title')).toBeTruthy();
        } finally {
          run.kill('SIGTERM');
        }
      } finally {
        await browser.close();
        fs.rmSync(profile, { recursive: true, force: true });
        serve.kill('SIGTERM');
      }
    });

    test("one host's part of a net across hosts (--net-host): outboxes " +
      'and places fed from elsewhere say so, a stopped outbox in red', {
      timeout: 60_000,
    }, async () => {
      const dir = netDir();
      const file = path.join(dir, 'net.yaml');
      fs.writeFileSync(
        file,
        `
hosts: { a: {}, b: {} }
places:
  src: { host: a }
  mid: { host: b }
  done: { host: a }
transitions:
  ship: { host: a, in: src, out: mid }
  work: { host: b, in: mid, out: done }
`,
      );
      expect((await runFspl(['net', 'init', file, '--host', 'b'])).status).toBe(0);
      // As the sender of b's outbox leaves it once it stopped (outbox-sender.ts SenderState).
      const outbox = path.join(dir, 'net.state/b/outbox/done');
      fs.writeFileSync(
        path.join(outbox, 'sender.json'),
        JSON.stringify({
          host: 'a',
          remoteDir: path.join(dir, 'places/done'),
          pid: 1,
          updatedAt: Date.now(),
          sent: 0,
          duplicates: 0,
          stopped: { at: Date.now(), error: 'fspl at /opt/typo/fspl on a: not found' },
        }),
      );
      const serve = spawnFspl(['net', 'serve', file, '--net-host', 'b', '--port', '0']);
      const [, url] = await lineOf(serve, /at (http:\/\/127\.0\.0\.1:\d+\/)/);
      const { browser, profile } = await launchChromium();
      try {
        const page = browser.pages()[0] ?? (await browser.newPage());
        await page.goto(url!);
        await page.locator('svg g#transition-work').waitFor();
        expect(await page.locator('svg g#transition-ship').count()).toBe(0); // a's part is not drawn
        const cells = async (place: string) =>
          page
            .locator('#places tbody tr', { hasText: new RegExp(`^${place}`) })
            .locator('td')
            .allTextContents();
        await expect.poll(async () => (await cells('mid'))[1]).toBe('inbox');
        expect((await cells('mid'))[6]).toBe('written by host a (outbox)');
        expect((await cells('done'))[1]).toBe('outbox');
        expect((await cells('done'))[6]).toBe(
          `outbox to a:${path.join(dir, 'places/done')}: 0 waiting; the ` +
            `last run stopped sending: fspl at /opt/typo/fspl on a: not found`,
        );
        expect(await page.locator('#places tbody tr', { hasText: /^done/ }).getAttribute('class')).toBe('alarm');
        expect(await page.locator('svg g#place-done').getAttribute('class')).toContain('stuck');
      } finally {
        await browser.close();
        fs.rmSync(profile, { recursive: true, force: true });
        serve.kill('SIGTERM');
      }
    });
  },
);
