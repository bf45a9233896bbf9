import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/http/app.js';
import { GraphStore } from '../../../src/graphs/store.js';
import type { AuthConfig } from '../../../src/http/auth.js';
import {
  HIDDEN_ACTIONS,
  MAX_AWAITING_ROWS,
  MAX_ATTACKED_ROWS,
  QUIET_PAGE_ROWS,
  renderStatusPage,
  type StatusView,
} from '../../../src/http/routes/status-page.js';
import type { JournalEntry } from '../../../src/store/rows.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { captureLogger } from '../../helpers/logger.js';
import { tempDir } from '../../helpers/tmp.js';

const view = (over: Partial<StatusView> = {}): StatusView => ({
  version: '1.2.3',
  apiUp: 1,
  polls: [
    {
      poll: 'firewall',
      outcome: 'partial',
      finishedAt: Date.UTC(2026, 10, 21, 12),
      lastSuccessAt: Date.UTC(2026, 10, 21, 12),
      durationMs: 812,
    },
  ],
  servers: [
    {
      serverId: '1',
      hostname: 'quiet.example.net',
      location: 'ams1',
      status: 'online',
      ips: [{ ip: '198.18.0.1', events: 0 }],
    },
    {
      serverId: '2',
      hostname: '<script>alert(1)</script>',
      location: 'fra1',
      status: 'online',
      ips: [{ ip: '198.18.0.3', events: 7 }],
    },
  ],
  services: [{ serviceType: 'transit', serviceId: 'transit-1', ips: [{ ip: '198.19.0.9', events: 2 }] }],
  graphs: [],
  actions: [],
  now: Date.UTC(2026, 10, 21, 12, 0, 5),
  ...over,
});

describe('status page', () => {
  it('highlights attacked IPs, servers under attack first, and counts them', () => {
    const html = renderStatusPage(view());
    expect(html).toContain('<span class="attack" data-attacked="198.18.0.3">198.18.0.3 (7 events)</span>');
    expect(html).toContain('<strong id="attacked-count">2</strong>');
    expect(html.indexOf('198.18.0.3')).toBeLessThan(html.indexOf('198.18.0.1'));
    expect(html).toContain('<span class="ok" id="api-up">up</span>');
    expect(html).toContain('<td>firewall</td><td class="ok">partial</td><td>2026-11-21 12:00:00Z</td><td>812 ms</td>');
  });

  it('escapes every value from the API', () => {
    const html = renderStatusPage(view());
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('says so when nothing happened yet', () => {
    const html = renderStatusPage(view({ apiUp: undefined, servers: [], services: [] }));
    expect(html).toContain('no request yet');
    expect(html).toContain('no graph fetched yet');
    expect(html).toContain('<h2>Last remediation decisions</h2>\n<p class="muted">none</p>');
  });
});

/** `count` servers with two IPs each; every `attackedEvery`th server has its first IP under attack. */
const fleet = (count: number, attackedEvery: number): StatusView['servers'] =>
  Array.from({ length: count }, (_, i) => ({
    serverId: String(100001 + i),
    hostname: `host-${100001 + i}.example.net`,
    location: 'ams1',
    status: 'online',
    ips: [
      { ip: `10.${i >> 8}.${i & 255}.1`, events: i % attackedEvery === 0 ? 3 : 0 },
      { ip: `10.${i >> 8}.${i & 255}.2`, events: 0 },
    ],
  }));

// Issue 22: every server listed made 2.8 MB at 10,000 servers, re-rendered on every 30-second refresh.
describe('status page at fleet size', () => {
  const servers = fleet(10_000, 25); // 400 under attack: more than are listed
  it.each([
    { name: 'the first page', page: 1, firstQuiet: '100002', prev: false, next: true },
    { name: 'page 2', page: 2, firstQuiet: '100106', prev: true, next: true },
    { name: 'the last page', page: 96, firstQuiet: '109897', prev: true, next: false },
    { name: 'a page past the last (shows the last)', page: 5000, firstQuiet: '109897', prev: true, next: false },
  ])('10,000 servers, $name: bounded, every count, the attacked first', ({ page, firstQuiet, prev, next }) => {
    const html = renderStatusPage(view({ servers, services: [] }), page);
    expect(Buffer.byteLength(html)).toBeLessThan(160 * 1024);
    expect(html).toContain('servers: <strong>10000</strong>');
    expect(html).toContain('servers under attack: <strong id="attacked-servers">400</strong>');
    expect(html).toContain('<strong id="attacked-count">400</strong>');
    expect(html.match(/data-attacked=/g)).toHaveLength(MAX_ATTACKED_ROWS);
    expect(html).toContain(`and ${400 - MAX_ATTACKED_ROWS} more: GET /api/v1/attacks lists every attack`);
    const quiet = html.slice(html.indexOf('<table id="servers">'));
    expect(quiet.match(/<tr><td>/g)).toHaveLength(QUIET_PAGE_ROWS); // 9,600 quiet servers: 96 full pages
    expect(quiet).toContain(`<tr><td>${firstQuiet}</td>`);
    expect(html.includes('rel="prev"')).toBe(prev);
    expect(html.includes('rel="next"')).toBe(next);
  });

  it.each([
    { query: '?page=0', status: 400 },
    { query: '?page=abc', status: 400 },
    { query: '?page=1e3', status: 400 },
    { query: '?page=2&page=3', status: 400 },
    { query: '?sort=ip', status: 400 },
    { query: '?page=3', status: 200 },
  ])('GET /$query answers $status', async ({ query, status }) => {
    const app = buildApp({
      logger: captureLogger().logger,
      exposition: new ExpositionCache({ registry: new Registry() }),
      graphStores: new Map([['default', new GraphStore(tempDir(), 'default')]]),
      graphMaxWidth: 2000,
      statusView: async () => view({ servers: fleet(1000, 10), services: [] }),
    });
    const res = await app.inject({ url: `/${query}` });
    await app.close();
    expect(res.statusCode).toBe(status);
    if (status === 200) expect(res.body).toContain('servers 201–300 of 900 · page 3 of 9');
    else expect(res.json()).toMatchObject({ statusCode: 400 });
  });
});

describe('remediation decisions on the status page', () => {
  const decision = {
    id: 1,
    createdAt: Date.UTC(2026, 10, 21, 11),
    completedAt: Date.UTC(2026, 10, 21, 11),
    source: 'alert',
    action: 'powercycle',
    serverId: '100001',
    ip: null,
    value: null,
    decision: 'executed',
    message: 'power cycle requested',
    idempotencyKey: null,
  } as unknown as JournalEntry;
  const build = (webAuth?: AuthConfig) => {
    const asked: boolean[] = [];
    const app = buildApp({
      logger: captureLogger().logger,
      exposition: new ExpositionCache({ registry: new Registry() }),
      graphStores: new Map([['default', new GraphStore(tempDir(), 'default')]]),
      graphMaxWidth: 2000,
      ...(webAuth ? { webAuth } : {}),
      statusView: async ({ actions }) => {
        asked.push(actions);
        return view({ actions: actions ? [decision] : undefined });
      },
    });
    return { app, asked };
  };

  it.each([
    { name: 'no web.auth', webAuth: undefined, headers: {}, actions: false },
    {
      name: 'web.auth with nothing configured (the default)',
      webAuth: { bearerTokens: [], basicAuthUsers: {} },
      headers: {},
      actions: false,
    },
    // The scrape credential reads the page's counts and nothing else (issue 51); a reader's or operator's own
    // credential sees the details (test/integration/principals.test.ts, "one identity per person").
    {
      name: "web.auth set, web.auth's own credential",
      webAuth: { bearerTokens: ['page-token-0123456789'], basicAuthUsers: {} },
      headers: { authorization: 'Bearer page-token-0123456789' },
      actions: false,
    },
  ])('$name → decisions shown: $actions', async ({ webAuth, headers, actions }) => {
    const { app, asked } = build(webAuth);
    const res = await app.inject({ url: '/', headers });
    await app.close();
    expect(res.statusCode).toBe(200);
    expect(asked).toEqual([actions]);
    expect(res.body.includes('power cycle requested')).toBe(actions);
    expect(res.body.includes(HIDDEN_ACTIONS)).toBe(!actions);
  });

  it('keeps the page closed to an unauthenticated user when web.auth is set', async () => {
    const { app, asked } = build({ bearerTokens: ['page-token-0123456789'], basicAuthUsers: {} });
    expect((await app.inject('/')).statusCode).toBe(401);
    await app.close();
    expect(asked).toEqual([]);
  });

  it('shows who asked for each decision and why, escaped', () => {
    const html = renderStatusPage(
      view({ actions: [{ ...decision, source: 'operator', principal: 'alice', reason: 'hung <since> 10:00' }] }),
    );
    expect(html).toContain('<th>principal</th>');
    expect(html).toContain('<td>alice</td>');
    expect(html).toContain('<td>hung &lt;since&gt; 10:00</td>');
  });

  it('lists at most MAX_AWAITING_ROWS requests awaiting approval, escaped, and counts the rest', () => {
    const awaiting = Array.from({ length: MAX_AWAITING_ROWS + 2 }, (_, i) => ({
      id: i + 1,
      account: 'default',
      serverId: '100001',
      ip: null,
      action: 'powercycle',
      principal: 'alice',
      rule: null,
      reason: 'hung <since> 10:00',
      deadline: Date.UTC(2026, 10, 21, 12, 15),
    }));
    const html = renderStatusPage(view({ awaiting, openBreakers: [] }));
    expect(html.match(/data-awaiting=/g)).toHaveLength(MAX_AWAITING_ROWS);
    expect(html).toContain('<td>hung &lt;since&gt; 10:00</td><td>2026-11-21 12:15:00Z</td>');
    expect(html).toContain('and 2 more: GET /api/v1/actions?decision=awaiting_approval lists them');
    expect(html).not.toContain('data-breaker');
    expect(renderStatusPage(view({ awaiting: [] }))).toContain(
      '<h2>Requests awaiting approval</h2>\n<p class="muted">none</p>',
    );
  });

  it('renders the note instead of the table', () => {
    expect(renderStatusPage(view({ actions: undefined }))).toContain(
      `<h2>Last remediation decisions</h2>\n<p class="muted">${HIDDEN_ACTIONS}</p>`,
    );
  });
});
