import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AlertmanagerClient } from '../../src/alertmanager/client.js';
import { type LabelMatcher, parseMatcher } from '../../src/config/matchers.js';
import { DEFAULT_RESEND_INTERVAL_MS } from '../../src/remediation/episode.js';
import { startQuietAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/processes.js';
import { captureLogger } from '../helpers/logger.js';
import { engineHarness, firewallRequest, powerRequest, SAFETY_WITHOUT_ATTACK_GUARD } from '../helpers/remediation.js';

const binary = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');
const GATE = ['alertname = "DatacenterOutage"', 'dc =~ "fra.*"'].map((t) => parseMatcher(t) as LabelMatcher);

describe.skipIf(binary.skip)("the outage gate against Debian's Alertmanager", () => {
  let am: Awaited<ReturnType<typeof startQuietAlertmanager>>['am'];
  let client: AlertmanagerClient;
  const reads: boolean[] = [];

  /** Posts alerts to Alertmanager (as Prometheus does) and waits until its API lists what `until` wants. */
  const post = async (alerts: object[], until: (names: string[]) => boolean) => {
    const res = await request(`${am.url}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(alerts),
    });
    await res.body.dump();
    await eventually('Alertmanager to list the alerts', async () => {
      const names = (await client.alerts()).map((a) => `${a.labels.alertname}/${a.labels.dc}`);
      return until(names) ? true : undefined;
    });
  };
  /** An engine whose clock is a resend interval past Alertmanager's start (real time): its list can be trusted. */
  const harness = async (gate: LabelMatcher[]) => {
    const h = await engineHarness(
      { safety: { ...SAFETY_WITHOUT_ATTACK_GUARD, blockWhileFiring: gate } },
      ':memory:',
      2000,
      { alertmanager: client },
    );
    h.clock.now = Date.now() + DEFAULT_RESEND_INTERVAL_MS;
    return h;
  };

  beforeAll(async () => {
    ({ am, client } = await startQuietAlertmanager(binary.skip ? '' : binary.path, 'bmx-am-gate-', (_operation, ok) =>
      reads.push(ok),
    ));
  });
  afterAll(async () => {
    await client?.close();
    await am?.stop();
  });

  it('lets a power action through while no alert matches every matcher of the gate', async () => {
    await post([{ labels: { alertname: 'DatacenterOutage', dc: 'ams1' } }], (n) => n.includes('DatacenterOutage/ams1'));
    const h = await harness(GATE);
    const decided = await h.engine.request(powerRequest());
    expect(decided.decision).toBe('executed');
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(1);
    // The row records what the gate read: no matching alert fired (the ams1 one does not match).
    expect((await h.journal.get(decided.id))?.gate).toEqual({ read: 'none_firing' });
  });

  it('denies power actions while a matching alert is in Alertmanager, silenced or not, and acts once it resolved', async () => {
    const outage = { labels: { alertname: 'DatacenterOutage', dc: 'fra1', severity: 'critical' } };
    await post([outage], (n) => n.includes('DatacenterOutage/fra1'));
    const h = await harness(GATE);
    const key = { source: 'alert' as const, idempotencyKey: 'alert:fp:1:firing:powercycle' };
    const denied = await h.engine.request(powerRequest(key));
    expect(denied.decision).toBe('denied_blocked');
    expect(denied.message).toContain(
      'power actions are blocked while DatacenterOutage{dc="fra1", severity="critical"} fires (remediation.safety.block_while_firing: alertname="DatacenterOutage", dc=~"fra.*")',
    );
    // The row records the blocking alert as Alertmanager listed it: its fingerprint and labels.
    const listed = (await client.alerts()).find((a) => a.labels.dc === 'fra1')!;
    expect(await h.journal.get(denied.id)).toMatchObject({
      decision: 'denied_blocked',
      gate: {
        read: 'blocked',
        alert: { alertname: 'DatacenterOutage', fingerprint: listed.fingerprint, labels: outage.labels },
        more: 0,
      },
    });
    // A silence mutes notifications, not the outage: still blocked.
    const silence = await client.createSilence({
      matchers: [{ name: 'alertname', value: 'DatacenterOutage', isRegex: false, isEqual: true }],
      startsAt: Date.now(),
      endsAt: Date.now() + 600_000,
      createdBy: 'test',
      comment: 'maintenance',
    });
    await eventually('the outage to be silenced', async () =>
      (await client.alerts()).some((a) => a.silencedBy.includes(silence)) ? true : undefined,
    );
    expect((await h.engine.request(powerRequest({ serverId: '100002' }))).decision).toBe('denied_blocked');
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(0);
    // Resolved (Prometheus sends endsAt in the past): the same delivery, not claimed, now acts.
    await post(
      [{ ...outage, endsAt: new Date(Date.now() - 1000).toISOString() }],
      (n) => !n.includes('DatacenterOutage/fra1'),
    );
    expect((await h.engine.request(powerRequest(key))).decision).toBe('executed');
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(1);
  });

  it("denies as unknown within a resend interval of Alertmanager's start, an outage or not", async () => {
    const h = await harness(GATE);
    // Alertmanager started seconds ago: a restarted one lists nothing until Prometheus sends its alerts again.
    const { startedAt } = await client.status();
    h.clock.now = startedAt + DEFAULT_RESEND_INTERVAL_MS - 1000;
    const denied = await h.engine.request(powerRequest());
    expect(denied.decision).toBe('denied_blocked');
    expect(denied.message).toBe(
      `whether an outage alert fires is unknown: Alertmanager started at ${new Date(startedAt).toISOString()}, less than remediation.alertmanager.resend_interval (60s) ago: it may not list every firing alert yet; power actions need it (remediation.safety.block_while_firing)`,
    );
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(0);
    // A resend interval after its start, the same request (not claimed) acts: no outage listed.
    h.clock.now = startedAt + DEFAULT_RESEND_INTERVAL_MS;
    expect((await h.engine.request(powerRequest())).decision).toBe('executed');
  });

  it('denies as unknown once Alertmanager is stopped; without a gate nothing reads it and the action is sent', async () => {
    await am.stop();
    const gated = await harness(GATE);
    const denied = await gated.engine.request(powerRequest());
    expect(denied.decision).toBe('denied_blocked');
    expect(denied.message).toMatch(
      /^whether an outage alert fires is unknown: Alertmanager cannot be read \(Alertmanager \[GET\] "\/api\/v2\/status": .*ECONNREFUSED.*\); power actions need it \(remediation\.safety\.block_while_firing\)$/,
    );
    expect(gated.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(0);
    expect((await gated.journal.get(denied.id))?.gate).toMatchObject({
      read: 'unknown',
      reason: expect.stringMatching(/^Alertmanager cannot be read \(.*ECONNREFUSED/),
    });
    const readsBefore = reads.length;
    const ungated = await harness([]);
    const sent = await ungated.engine.request(powerRequest());
    expect(sent.decision).toBe('executed');
    // No gate configured: nothing read, nothing recorded.
    expect((await ungated.journal.get(sent.id))?.gate).toBeNull();
    expect(reads.length).toBe(readsBefore);
  });
});

describe('the outage gate reads Alertmanager before the decision, never inside its transaction', () => {
  const closing: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closing.splice(0)) await close();
  });

  it('while a slow Alertmanager holds its reply, another decision is made and journaled first', async () => {
    // A loopback Alertmanager that holds every reply until the test lets it go.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const asked: string[] = [];
    const server = createServer((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      // Up since long before the decision (its status), no alert (its list).
      const body = req.url === '/api/v2/status' ? JSON.stringify({ uptime: '2020-01-01T00:00:00Z' }) : '[]';
      void held.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closing.push(() => new Promise((resolve) => server.close(resolve)));
    const client = new AlertmanagerClient({
      config: {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        // Only a regression waits this long: the gate's read inside the transaction would hold the firewall
        // decision below until the read timed out, and the power row would then be journaled first.
        timeoutMs: 10_000,
        maxResponseBytes: 1 << 20,
        silenceWhileHandled: false,
        tls: { insecureSkipVerify: false },
      },
      logger: captureLogger().logger,
    });
    closing.push(() => client.close());
    const h = await engineHarness(
      { safety: { ...SAFETY_WITHOUT_ATTACK_GUARD, blockWhileFiring: GATE } },
      ':memory:',
      2000,
      { alertmanager: client },
    );
    const gated = h.engine.request(powerRequest());
    await eventually('the gate to ask Alertmanager', async () => (asked.length > 0 ? true : undefined));
    // Its reply held: a firewall change (which the gate does not read for) is decided, sent and journaled.
    const other = await h.engine.request(firewallRequest('1'));
    expect(other.decision).toBe('executed');
    expect(asked.map((line) => line.split('?')[0])).toEqual(['GET /api/v2/status']);
    release();
    const decided = await gated;
    // Decided on Alertmanager's answer (no outage), not on a timed-out read, and journaled after the other.
    expect(decided.decision).toBe('executed');
    expect(decided.id).toBeGreaterThan(other.id);
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(1);
  });
});
