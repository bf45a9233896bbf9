/**
 * The status page in a real headless Chromium: no console error, the attacked IP highlighted, the graphs
 * decoded; the counts of requests awaiting approval and of open breakers on the open page, and behind web.auth
 * the pending section (what approves each request) and the open breaker's banner.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { journalRow } from '../../src/store/rows.js';
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

const launch = () =>
  chromium.launch({
    executablePath: browserBinary.skip ? '' : browserBinary.path,
    args: CHROMIUM_ARGS,
    headless: true,
  });

/** Records the page's console errors and warnings and its uncaught errors. */
function problemsOf(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning')
      problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  return problems;
}

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
    browser = await launch();
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.stop();
  });

  it('loads without console errors, highlights the attacked IP and shows a graph that decoded', async () => {
    const page = await browser.newPage();
    const problems = problemsOf(page);
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

  it('counts the requests awaiting approval and the open breakers to anyone, and shows none of their details', async () => {
    await daemon.store.insert(
      journalRow({
        account: 'default',
        createdAt: Date.now(),
        source: 'operator',
        action: 'powercycle',
        serverId: '100001',
        principal: 'alice',
        reason: 'secret-ish detail',
        decision: 'awaiting_approval',
      }),
    );
    await daemon.store.openCircuit('default', Date.now(), 'opened by the e2e test');
    const page = await browser.newPage();
    const problems = problemsOf(page);
    expect((await page.goto(`${daemon.url}/`, { waitUntil: 'load' }))?.status()).toBe(200);
    expect(await page.locator('#awaiting-count').textContent()).toBe('1');
    expect(await page.locator('#open-breakers').textContent()).toBe('1');
    expect(await page.locator('#pending').textContent()).toContain(
      '(details for a reader or operator when web.auth is set)',
    );
    expect(await page.locator('[data-awaiting], [data-breaker], #awaiting').count()).toBe(0);
    expect(await page.content()).not.toContain('secret-ish detail');
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe.skipIf(browserBinary.skip)('the pending section behind web.auth, in a real headless Chromium', () => {
  const PAGE_TOKEN = 'page-token-5f1e9c0a7b3d';
  const tokenOf = (name: string) => `${name}-token-5f1e9c0a7b3d`;
  let harness: Harness;
  let browser: Browser;

  beforeAll(async () => {
    harness = await startHarness({
      simulator: { servers: 3, attackRate: 0 },
      logLevel: 'warn',
      config: ({ stateDir }) => {
        const file = (name: string, token: string) => {
          writeFileSync(join(stateDir, `${name}.token`), `${token}\n`);
          return join(stateDir, `${name}.token`);
        };
        return {
          web: { auth: { bearer_token_files: [file('page', PAGE_TOKEN)] } },
          remediation: {
            dry_run: false,
            safety: { deny_power_when_attacked: false },
            auth: {
              principals: [
                {
                  name: 'alice',
                  bearer_token_file: file('alice', tokenOf('alice')),
                  roles: ['operator', 'reader'],
                  require_approval: true,
                },
                { name: 'bob', bearer_token_file: file('bob', tokenOf('bob')), roles: ['operator', 'reader'] },
              ],
            },
          },
        };
      },
      daemon: { listen: true },
    });
    await harness.daemon.ready;
    browser = await launch();
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.stop();
  });

  it('lists the request with the command that approves it, and the open breaker banner', async () => {
    const { daemon } = harness;
    const asked = await request(`${daemon.url}/api/v1/actions/powercycle`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokenOf('alice')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ server_id: '100002', reason: 'hung since 10:00' }),
    });
    const { id, decision } = (await asked.body.json()) as { id: number; decision: string };
    expect(decision).toBe('awaiting_approval');
    await daemon.store.openCircuit('default', Date.now(), 'opened by the e2e test');

    // Without the page's credentials: nothing.
    const closed = await browser.newPage();
    expect((await closed.goto(`${daemon.url}/`))?.status()).toBe(401);
    await closed.close();

    // The scrape credential of web.auth: the counts, none of the details (issue 51: it reads nothing else).
    const scrape = await browser.newContext({ extraHTTPHeaders: { authorization: `Bearer ${PAGE_TOKEN}` } });
    const counted = await scrape.newPage();
    expect((await counted.goto(`${daemon.url}/`, { waitUntil: 'load' }))?.status()).toBe(200);
    expect(await counted.locator('#pending').textContent()).toContain('(details for a reader or operator');
    expect(await counted.locator(`#awaiting tr[data-awaiting="${id}"]`).count()).toBe(0);
    await scrape.close();

    // An operator's own credential: the details.
    const context = await browser.newContext({ extraHTTPHeaders: { authorization: `Bearer ${tokenOf('bob')}` } });
    const page = await context.newPage();
    const problems = problemsOf(page);
    expect((await page.goto(`${daemon.url}/`, { waitUntil: 'load' }))?.status()).toBe(200);
    const cells = await page.locator(`#awaiting tr[data-awaiting="${id}"] td`).allTextContents();
    expect(cells[0]).toBe(String(id));
    expect(cells.slice(1, 7)).toEqual(['default', '100002', 'powercycle', 'alice', '—', 'hung since 10:00']);
    expect(cells[7]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
    expect(cells[8]).toBe(`POST /api/v1/actions/${id}/approve`);
    expect(await page.locator('[data-breaker="default"]').textContent()).toMatch(
      /^Circuit breaker of account default open since .+: opened by the e2e test\. Power actions are denied/,
    );
    expect(await page.locator('#awaiting-count').textContent()).toBe('1');
    expect(await page.locator('#open-breakers').textContent()).toBe('1');
    expect(await page.locator('#pending').textContent()).not.toContain('details for a reader or operator');
    expect(problems).toEqual([]);
    await context.close();
  });
});
