import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertmanagerClient } from '../../src/alertmanager/client.js';
import { type LabelMatcher, parseMatcher } from '../../src/config/matchers.js';
import { startQuietAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/processes.js';
import { engineHarness, powerRequest, SAFETY_WITHOUT_ATTACK_GUARD } from '../helpers/remediation.js';

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
  const harness = (gate: LabelMatcher[]) =>
    engineHarness({ safety: { ...SAFETY_WITHOUT_ATTACK_GUARD, blockWhileFiring: gate } }, ':memory:', 2000, {
      alertmanager: client,
    });

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
    expect((await h.journal.get(denied.id))?.decision).toBe('denied_blocked');
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

  it('denies as unknown once Alertmanager is stopped; without a gate nothing reads it and the action is sent', async () => {
    await am.stop();
    const gated = await harness(GATE);
    const denied = await gated.engine.request(powerRequest());
    expect(denied.decision).toBe('denied_blocked');
    expect(denied.message).toMatch(
      /^whether an outage alert fires is unknown: Alertmanager cannot be read \(Alertmanager \[GET\] "\/api\/v2\/alerts": .*ECONNREFUSED.*\); power actions need it \(remediation\.safety\.block_while_firing\)$/,
    );
    expect(gated.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(0);
    const readsBefore = reads.length;
    const ungated = await harness([]);
    expect((await ungated.engine.request(powerRequest())).decision).toBe('executed');
    expect(reads.length).toBe(readsBefore);
  });
});
