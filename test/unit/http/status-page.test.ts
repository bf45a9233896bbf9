import { describe, expect, it } from 'vitest';
import { renderStatusPage, type StatusView } from '../../../src/http/routes/status-page.js';

const view = (over: Partial<StatusView> = {}): StatusView => ({
  version: '1.2.3',
  apiUp: 1,
  polls: [{ poll: 'firewall', outcome: 'partial', finishedAt: Date.UTC(2026, 10, 21, 12), lastSuccessAt: Date.UTC(2026, 10, 21, 12), durationMs: 812 }],
  servers: [
    { serverId: '1', hostname: 'quiet.example.net', location: 'ams1', status: 'online', ips: [{ ip: '198.18.0.1', events: 0 }] },
    { serverId: '2', hostname: '<script>alert(1)</script>', location: 'fra1', status: 'online', ips: [{ ip: '198.18.0.3', events: 7 }] },
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
