/**
 * Debian's chromium driven by playwright-core, for the tests of fspl's pages in a real browser
 * (the nets' page, the queues' page). FSPL_CHROMIUM names another binary.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CHROMIUM = process.env.FSPL_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = fs.existsSync(CHROMIUM);

/**
 * A headless chromium with a profile of its own (remove `profile` after closing); `args` are added to its command line.
 */
export async function launchChromium(viewport?: { width: number; height: number }, args: string[] = []) {
  // Imported here, not at the top: without chromium the suite is skipped, and needs no playwright.
  const { chromium } = await import('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      ...args,
    ],
    ...(viewport ? { viewport } : {}),
  });
  return { browser, profile };
}
