import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { requireBinary } from '../helpers/binaries.js';
import { startHarness, type Harness } from '../helpers/daemon.js';

const browserBinary = requireBinary('/usr/bin/chromium', 'chromium');

/** Flags for Debian's Chromium as root on a machine without network (see the env notes). */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe.skipIf(browserBinary.skip)('the status page in a real headless Chromium', () => {
  let harness: Harness;
  let daemon: Daemon;
  let browser: Browser;
  const attackedIp = '198.18.0.4';

  beforeAll(async () => {
    harness = await startHarness({
      key: 'page-key',
      start: false,
      simulator: { servers: 3, attackRate: 0 },
      logLevel: 'warn',
      daemon: { listen: true },
    });
    harness.sim.state.startAttack(attackedIp);
    daemon = await harness.start();
    await daemon.ready;
    browser = await chromium.launch({
      executablePath: browserBinary.skip ? '' : browserBinary.path,
      args: CHROMIUM_ARGS,
      headless: true,
    });
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.stop();
  });

  it('loads without console errors, highlights the attacked IP and shows a graph that decoded', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning')
        problems.push(`${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    const response = await page.goto(`${daemon.url}/`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    expect(await page.title()).toBe('baremetal-exporter status');
    expect(await page.locator(`[data-attacked="${attackedIp}"]`).textContent()).toMatch(
      new RegExp(`^${attackedIp.replaceAll('.', '\\.')} \\(\\d+ events?\\)$`),
    );
    expect(await page.locator('#attacked-count').textContent()).toBe('1');
    expect(await page.locator('#api-up').textContent()).toBe('up');
    const images = page.locator('.thumbs img');
    expect(await images.count()).toBe(3);
    const widths = await images.evaluateAll((nodes) =>
      nodes.map((n) => (n as unknown as { naturalWidth: number }).naturalWidth),
    );
    expect(widths.every((w) => w > 0)).toBe(true);
    if (process.env.BAREMETAL_SCREENSHOT)
      await page.screenshot({ path: process.env.BAREMETAL_SCREENSHOT, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });
});
