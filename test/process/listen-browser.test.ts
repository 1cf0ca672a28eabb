/**
 * The page of `queue-process --watch --listen` in a real browser (Debian's chromium driven by
 * playwright-core, as the nets' page is tested): a queue stopped by a failing job under
 * --on-error Retry shows as stopped on that job with its reason and its saved output (as text:
 * the markup in it runs nothing), the other queue's figures change live, and a page reached by
 * another name (DNS rebinding: chromium told that evil.example is 127.0.0.1) is refused.
 * FSPL_SCREENSHOT_QUEUES=FILE keeps the screenshot.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, memTempDir } from '../helpers.js';
import { runFspl, spawnFspl } from '../net/helpers.js';
import { CHROMIUM, hasChromium, launchChromium } from '../web/chromium.js';

/** Put a job holding `payload` into the queue at dir (fspl prepare | fspl queue-write). */
function put(dir: string, seqfile: string, payload: string): void {
  const line = 'printf %s "$1" | "$0" prepare -s "$2" -i - | "$0" queue-write -q "$3"';
  execFileSync('sh', ['-c', line, FSPL_BIN, payload, seqfile, dir]);
}

describeIfPresent(
  'the queues page in a browser',
  hasChromium ? [] : [`chromium (${CHROMIUM})`],
  { what: 'browser test', note: 'apt-get install -y chromium' },
  () => {
    test('a stopped queue shows its reason; figures change live; a foreign Host is refused', {
      timeout: 120_000,
    }, async () => {
      const root = memTempDir();
      const [good, bad] = ['good', 'bad'].map((n) => path.join(root, n));
      for (const q of [good!, bad!]) expect((await runFspl(['queue-init', '-q', q])).status).toBe(0);
      put(bad!, path.join(root, 'seq-bad'), 'bad');
      const script = 'if grep -q bad; then echo "boom: <img src=x onerror=window.pwned=1>" >&2; exit 3; fi';
      const run = spawnFspl([
        '--log-level',
        'info',
        'queue-process',
        '-q',
        good!,
        '-q',
        bad!,
        '--watch',
        '--listen',
        '127.0.0.1:0',
        '--on-error',
        'Retry',
        '--output-to',
        'SaveBoth',
        'sh',
        '--',
        '-c',
        script,
      ]);
      // The address is logged on stderr.
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        run.stderr!.on('data', (d) => {
          err += d;
          const m = /page at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(err);
          if (m) resolve(m[1]!);
        });
        run.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
      });
      const port = new URL(url).port;
      const { browser, profile } = await launchChromium({ width: 1200, height: 700 }, [
        '--host-resolver-rules=MAP evil.example 127.0.0.1',
      ]);
      try {
        const page = browser.pages()[0] ?? (await browser.newPage());
        await page.goto(url);
        const badRow = page.locator(`#queues tbody tr[data-queue="${bad}"]`);
        await page.waitForFunction(
          (q) =>
            document.querySelector(`#queues tbody tr[data-queue="${q}"]`)?.getAttribute('data-state') === 'stopped',
          bad,
          {
            timeout: 30_000,
          },
        );
        expect(await badRow.locator('td.state').textContent()).toMatch(
          /^stopped on job 1: Job 1 failed \(command exited with status 3\)/,
        );
        expect(await page.locator('#banner').textContent()).toBe('2 queues: 0 running, 1 stopped');
        expect(await page.locator('#banner').getAttribute('class')).toBe('banner stopped');
        expect(await page.locator('.failures pre.output').first().textContent()).toBe(
          'boom: <img src=x onerror=window.pwned=1>\n',
        );
        expect(await page.locator('.failures img').count()).toBe(0);

        // Live: a job put now shows up as done without a reload.
        await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
        put(good!, path.join(root, 'seq-good'), 'fine');
        await page.waitForFunction(
          (q) => document.querySelector(`#queues tbody tr[data-queue="${q}"] td:nth-child(6)`)?.textContent === '1',
          good,
          {
            timeout: 30_000,
          },
        );
        expect(await page.evaluate(() => (window as unknown as { marker: number }).marker)).toBe(42);
        expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
        const shot = await page.screenshot({ fullPage: true });
        if (process.env.FSPL_SCREENSHOT_QUEUES) fs.writeFileSync(process.env.FSPL_SCREENSHOT_QUEUES, shot);

        // DNS rebinding: the same server reached by a name of the attacker's is refused.
        const foreign = await page.goto(`http://evil.example:${port}/`);
        expect(foreign?.status()).toBe(421);
        expect(await page.locator('body').textContent()).toMatch(/^misdirected request/);
        expect(await page.locator('#queues').count()).toBe(0);
      } finally {
        await browser.close();
        fs.rmSync(profile, { recursive: true, force: true });
        run.kill('SIGTERM');
      }
    });
  },
);
