/**
 * An `escalated` decision (the cap per server, remediation.safety.max_power_actions_per_server) logs one
 * warning naming the server, the count and the window: the webhook's own line is at info level only.
 */
import { describe, expect, it } from 'vitest';
import { engineHarness, powerRequest, SAFETY_WITHOUT_ATTACK_GUARD } from '../../helpers/remediation.js';

const MIN = 60_000;

/** The log lines of `lines` at warn level that say a request was escalated, parsed. */
const escalations = (lines: string[]) =>
  lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.level === 'warn' && String(line.msg).startsWith('remediation escalated'));

describe('an escalated decision', () => {
  it('logs one warning per escalated decision, with server_id, count and window', async () => {
    const h = await engineHarness({
      safety: { ...SAFETY_WITHOUT_ATTACK_GUARD, maxPowerActionsPerServer: 2, capWindowMs: 6 * 60 * MIN },
    });
    const decisions = [];
    for (let i = 0; i < 4; i++) {
      // Past the request's 30m cooldown, inside the 6h cap window.
      h.clock.now += 31 * MIN;
      decisions.push((await h.engine.request(powerRequest({ serverId: '100002' }))).decision);
    }
    expect(decisions).toEqual(['executed', 'executed', 'escalated', 'escalated']);
    const warnings = escalations(h.log.lines);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatchObject({
      server_id: '100002',
      count: 2,
      window: '21600s',
      action: 'powercycle',
      source: 'operator',
      msg: 'remediation escalated: server 100002 already had 2 power actions within 21600s; nothing sent, a person must look at it',
    });
    const [row] = await h.journal.list({ limit: 1 });
    expect(warnings[1]).toMatchObject({ server_id: '100002', count: 2, id: row!.id });
  });

  it.each([
    { name: 'an executed request', safety: SAFETY_WITHOUT_ATTACK_GUARD, decision: 'executed' },
    {
      name: 'a denial by another guard (the budget)',
      safety: SAFETY_WITHOUT_ATTACK_GUARD,
      budgetPerHour: 0,
      decision: 'denied_budget',
    },
  ])('logs no escalation for $name', async ({ safety, budgetPerHour, decision }) => {
    const h = await engineHarness({ safety, ...(budgetPerHour === undefined ? {} : { budgetPerHour }) });
    expect((await h.engine.request(powerRequest())).decision).toBe(decision);
    expect(escalations(h.log.lines)).toEqual([]);
  });
});
