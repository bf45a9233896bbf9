import sharp from 'sharp';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/simulator/server.js';
import {
  ATTACKED_PER_HOUR,
  DEMO_SIMULATOR,
  FIREWALL_STATE_WINDOW_MS,
  SimulatorState,
  slotAttackRate,
} from '../../../src/simulator/state.js';

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function post(
  path: string,
  body: Record<string, string>,
  headers: Record<string, string> = { authorization: 'demo-key' },
  json = false,
) {
  const res = await request(`${sim!.url}${path}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': json ? 'application/json' : 'application/x-www-form-urlencoded' },
    body: json ? JSON.stringify(body) : new URLSearchParams(body).toString(),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    text,
    type: String(res.headers['content-type']),
    json: () => JSON.parse(text) as Record<string, unknown>,
  };
}

describe('simulator state', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    const now = () => Date.UTC(2026, 10, 21, 12);
    const a = new SimulatorState({ seed: 3, servers: 50, attackRate: 0.2, now });
    const b = new SimulatorState({ seed: 3, servers: 50, attackRate: 0.2, now });
    const c = new SimulatorState({ seed: 4, servers: 50, attackRate: 0.2, now });
    const events = (s: SimulatorState) => [...s.services.values()].flatMap((svc) => s.history(svc, 3600));
    expect(events(a)).toEqual(events(b));
    expect(events(a).length).toBeGreaterThan(0);
    expect(events(a)).not.toEqual(events(c));
  });

  it('starts and ends attack episodes over time', () => {
    let t = Date.UTC(2026, 10, 21, 0);
    const state = new SimulatorState({ seed: 1, servers: 10, attackRate: 0.1, now: () => t });
    const ip = state.servers.get('100001')!.ips[0]!;
    const attackedPerHour: boolean[] = [];
    for (let hour = 0; hour < 48; hour++, t += 3600_000) attackedPerHour.push(state.eventsFor(ip, 3600).length > 0);
    expect(attackedPerHour).toContain(true);
    expect(attackedPerHour).toContain(false);
  });

  // Issue 22: the old default (3 % a five-minute slot) put 1,311 of 4,000 IPs under attack within the hour.
  it('by default puts a few percent of the IPs under attack within an hour, at any hour', () => {
    let t = Date.UTC(2026, 10, 21, 0);
    const state = new SimulatorState({ seed: 7, servers: 2000, colocations: 0, transits: 0, now: () => t });
    const ips = [...state.servers.values()].flatMap((s) => s.ips);
    for (let hour = 0; hour < 6; hour++, t += 3600_000) {
      const share = ips.filter((ip) => state.eventsFor(ip, 3600).length > 0).length / ips.length;
      expect(share, `hour ${hour}`).toBeGreaterThan(ATTACKED_PER_HOUR / 2);
      expect(share, `hour ${hour}`).toBeLessThan(ATTACKED_PER_HOUR * 2);
    }
  });

  it.each([
    { perHour: 0, slot: 300, expected: 0 },
    { perHour: 0.03, slot: 3600, expected: 0.03 },
    { perHour: 0.75, slot: 1800, expected: 0.5 },
  ])('a slot of $slot s is attacked with the chance that gives $perHour an hour', ({ perHour, slot, expected }) => {
    expect(slotAttackRate(perHour, slot)).toBeCloseTo(expected, 12);
  });

  it.each([-0.1, 1, Number.NaN])('refuses %s attacks per hour', (perHour) => {
    expect(() => slotAttackRate(perHour)).toThrow(RangeError);
  });

  it("shows a demo user only the banner's attacked IP, at any hour of two days", () => {
    let t = Date.UTC(2026, 10, 21, 0);
    const state = new SimulatorState({ ...DEMO_SIMULATOR, now: () => t });
    const ips = [...state.services.values()].flatMap((s) => s.ips);
    const banner = [...state.servers.values()][0]!.ips[0]!;
    state.startAttack(banner, 48 * 3600);
    for (let hour = 0; hour < 48; hour++) {
      t += 3600_000;
      expect(ips.filter((ip) => state.eventsFor(ip, 3600).length > 0)).toEqual([banner]);
    }
  });

  it('puts an IP under attack by hand and stops it; past events stay in the window', () => {
    let t = Date.UTC(2026, 10, 21, 0);
    const state = new SimulatorState({ attackRate: 0, now: () => t });
    const ip = state.servers.get('100002')!.ips[1]!;
    state.startAttack(ip);
    t += 5 * 60_000;
    expect(state.eventsFor(ip, 3600)).toHaveLength(6);
    state.stopAttack(ip);
    t += 30 * 60_000;
    expect(state.eventsFor(ip, 3600)).toHaveLength(6);
    t += 60 * 60_000;
    expect(state.eventsFor(ip, 3600)).toHaveLength(0);
  });
});

describe('simulator server', () => {
  it('accepts the key in Authorization or HTTP_AUTHORIZATION, rejects anything else', async () => {
    sim = await startSimulator({ servers: 2 });
    expect((await post('/api/v1/dedicated', {})).status).toBe(200);
    expect((await post('/api/v1/dedicated', {}, { http_authorization: 'demo-key' })).status).toBe(200);
    const wrong = await post('/api/v1/dedicated', {}, { authorization: 'nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.json()).toEqual({ error: true, message: 'Invalid API key.' });
    expect((await post('/api/v1/dedicated', {}, {})).status).toBe(401);
    expect(sim.calls.map((c) => c.authHeader)).toEqual([
      'authorization',
      'http_authorization',
      'authorization',
      'none',
    ]);
    expect(JSON.stringify(sim.calls)).not.toContain('demo-key');
  });

  it('reads form and JSON bodies alike, and lists or gets servers on one path', async () => {
    sim = await startSimulator({ servers: 3 });
    const list = (await post('/api/v1/dedicated', {})).json() as unknown as Array<Record<string, unknown>>;
    expect(list.map((s) => s.server_id)).toEqual(['100001', '100002', '100003']);
    expect(list[0]).toMatchObject({
      IP: '198.18.0.1',
      ips: ['198.18.0.1', '198.18.0.2'],
      OS: expect.any(String),
      processor: expect.any(String),
      memory: expect.any(String),
    });
    expect((await post('/api/v1/dedicated', { server_id: '100002' }, undefined, true)).json()).toMatchObject({
      server_id: '100002',
    });
    expect((await post('/api/v1/dedicated', { server_id: '9' })).json()).toEqual({
      error: true,
      message: 'Server not found.',
    });
  });

  it('applies the 2-minute firewall-state rule with the contract error reply', async () => {
    let t = Date.UTC(2026, 10, 21, 12);
    sim = await startSimulator({ servers: 1, now: () => t });
    const body = { server_id: '100001', ip: '198.18.0.1', state: '1' };
    expect((await post('/api/v1/dedicated/firewall/state', body)).json()).toEqual({
      success: true,
      message: 'The firewall state of IP 198.18.0.1 has been updated.',
    });
    t += FIREWALL_STATE_WINDOW_MS - 1;
    const refused = await post('/api/v1/dedicated/firewall/state', { ...body, state: '0' });
    expect(refused.json()).toEqual({
      error: true,
      message: 'The IP firewall state was already updated in the last 2 minutes.',
    });
    expect(sim.state.firewallSetting('198.18.0.1').state).toBe('1');
    t += 1;
    expect((await post('/api/v1/dedicated/firewall/state', { ...body, state: '0' })).json()).toMatchObject({
      success: true,
    });
    expect(sim.callsTo('/api/v1/dedicated/firewall/state', { ip: '198.18.0.1' })).toHaveLength(3);
  });

  it('returns firewall history for all IPs or one, for dedicated, colocation and transit', async () => {
    sim = await startSimulator({ servers: 1, attackRate: 0 });
    sim.state.startAttack('198.18.0.2');
    const all = (await post('/api/v1/dedicated/firewall', { server_id: '100001', scale: 'hour' })).json();
    expect(all).toEqual({
      success: true,
      firewall: [
        expect.objectContaining({
          ip: '198.18.0.2',
          id: expect.any(String),
          raw: expect.stringContaining('198.18.0.2'),
        }),
      ],
    });
    expect(
      (await post('/api/v1/dedicated/firewall', { server_id: '100001', scale: 'hour', ip: '198.18.0.1' })).json(),
    ).toEqual({ success: true, firewall: [] });
    expect((await post('/api/v1/colocation/firewall', { colocation_id: 'colo-1', scale: 'day' })).json()).toEqual({
      success: true,
      firewall: [],
    });
    expect((await post('/api/v1/transit/firewall', { transit_id: 'transit-1', scale: 'week' })).json()).toEqual({
      success: true,
      firewall: [],
    });
    expect((await post('/api/v1/transit/firewall', { transit_id: 'transit-1', scale: 'year' })).status).toBe(400);
  });

  it('draws real PNG graphs and serves a JNLP console', async () => {
    sim = await startSimulator({ servers: 1 });
    const graph = (
      await post('/api/v1/dedicated/graphs', { server_id: '100001', type: 'port_bits', scale: 'week' })
    ).json();
    const meta = await sharp(Buffer.from(String(graph.base64), 'base64')).metadata();
    expect(meta).toMatchObject({ format: 'png', width: 497, height: 169 });
    const console = await post('/api/v1/dedicated/console', { server_id: '100001' });
    expect(console.type).toBe('application/x-java-jnlp-file');
    expect(console.text).toMatch(/^<\?xml[\s\S]*<jnlp [\s\S]*<\/jnlp>\n$/);
  });

  it.each([
    { name: 'HTML 502 pages', faults: { htmlErrorRate: 1 }, status: 502, body: /<h1>502 Bad Gateway<\/h1>/ },
    {
      name: 'contract error replies',
      faults: { errorRate: 1 },
      status: 500,
      body: /^\{"error":true,"message":"An unexpected error occurred\."\}$/,
    },
    {
      name: 'malformed replies',
      faults: { malformedRate: 1 },
      status: 200,
      body: /^(42|\{"success":true,"firewall":\[\{"id":)$/,
    },
  ])('injects $name', async ({ faults, status, body }) => {
    sim = await startSimulator({ servers: 1, faults });
    const res = await post('/api/v1/dedicated/firewall', { server_id: '100001', scale: 'hour' });
    expect(res.status).toBe(status);
    expect(res.text).toMatch(body);
  });

  it('restricts faults to given paths and can change them at run time', async () => {
    sim = await startSimulator({ servers: 1, faults: { errorRate: 1, paths: ['/api/v1/reseller/locations'] } });
    expect((await post('/api/v1/dedicated', {})).status).toBe(200);
    expect((await post('/api/v1/reseller/locations', {})).status).toBe(500);
    sim.setFaults({});
    expect((await post('/api/v1/reseller/locations', {})).status).toBe(200);
  });
});
