import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AccountState } from '../../../src/collectors/account-state.js';
import { collectFirewallHistory } from '../../../src/collectors/firewall.js';
import { configFileSchema, DEFAULT_SCHEDULES, JOB_NAMES } from '../../../src/config/schema.js';
import { createMetrics } from '../../../src/metrics/definitions.js';
import { catalogPoll } from '../../../src/polls/catalog.js';
import { firewallPoll, firewallUnderAttackPoll } from '../../../src/polls/firewall.js';
import type { PollContext } from '../../../src/polls/poll.js';
import { EVERY_JOB_LISTED, type ListsEveryJob, POLLS } from '../../../src/polls/index.js';

describe('POLLS, the one list of polls', () => {
  it('has one definition per poll job of the configuration, each once', () => {
    const names = POLLS.map((poll) => poll.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...JOB_NAMES].sort());
    expect(EVERY_JOB_LISTED).toBe(true);
  });

  it("gives each poll the default of its `schedules` key (firewall_under_attack: the firewall poll's)", () => {
    const keys = configFileSchema.properties.schedules.properties as Record<string, { default?: string }>;
    for (const poll of POLLS) {
      const own = keys[poll.name]?.default;
      expect(poll.defaultSchedule).toBe(own ?? DEFAULT_SCHEDULES.firewall);
    }
  });

  it('makes firewall_under_attack a job only when its schedule differs from the firewall poll', () => {
    const schedules = (under: string) => ({ ...DEFAULT_SCHEDULES, firewall_under_attack: under });
    const config = (under: string) =>
      ({ schedules: schedules(under) }) as Parameters<NonNullable<typeof firewallUnderAttackPoll.enabled>>[0];
    expect(firewallUnderAttackPoll.enabled(config(DEFAULT_SCHEDULES.firewall))).toBe(false);
    expect(firewallUnderAttackPoll.enabled(config('*/5 * * * * *'))).toBe(true);
  });

  it('refuses, at compile time, a list that leaves a poll job out', () => {
    const complete: ListsEveryJob<typeof POLLS> = true;
    const withoutCatalog = POLLS.filter((poll) => poll.name !== 'catalog') as Exclude<
      (typeof POLLS)[number],
      { name: 'catalog' }
    >[];
    // @ts-expect-error -- catalog is missing: the type is `never` (tsconfig.check.json fails if this compiles)
    const missing: ListsEveryJob<typeof withoutCatalog> = true;
    expect([complete, missing]).toEqual([true, true]);
  });
});

describe('a poll switched off', () => {
  const ref = { serviceType: 'colocation' as const, serviceId: 'c1' };
  const setup = () => {
    const collectors = { firewall: true, graphs: true, catalog: true };
    const clock = { ms: 1_000_000 };
    const schedules = { ...DEFAULT_SCHEDULES, firewall_under_attack: DEFAULT_SCHEDULES.firewall };
    const state = new AccountState(
      { schedules, services: { colocationIds: ['c1'], transitIds: [] }, collectors },
      () => clock.ms,
    );
    const metrics = createMetrics(new Registry());
    const context = {
      account: 'a',
      state,
      metrics,
      config: { collectors, schedules },
      now: () => clock.ms,
    } as unknown as PollContext;
    return { collectors, clock, state, context, metrics };
  };

  it('forgets at its run what the firewall polls read: series state, attack log, waits, the oldest read', async () => {
    const { collectors, clock, state, context, metrics } = setup();
    state.noteUnread(state.services());
    const events = [{ id: 'e1', ip: '192.0.2.1', raw: '', fields: {} }];
    collectFirewallHistory(state.firewallState, { account: 'a', metrics }, ref, events, {
      limits: { maxIpsPerService: 5, ipRetentionMs: 1e9 },
      now: clock.ms,
    });
    state.attacks.record(ref, events, clock.ms);
    state.oldestReadAgeSeconds = 0;
    collectors.firewall = false;
    await firewallPoll.run(context, new AbortController().signal);
    expect(state.firewallState.services.size).toBe(0);
    expect(state.attacks.services.size).toBe(0);
    expect(state.oldestReadAgeSeconds).toBeUndefined();
    // Switched on a week later: its services wait since the first run after that, not since before the switch.
    clock.ms += 7 * 24 * 3600_000;
    collectors.firewall = true;
    state.noteUnread(state.services());
    expect(state.oldestRead()).toEqual({ ref, ageMs: 0, read: false });
  });

  it('forgets the catalog counts, by its hook (a reload) and at its run', async () => {
    const { collectors, state, context } = setup();
    Object.assign(state.catalog, { operatingSystems: 7, locations: 3 });
    collectors.catalog = false;
    await catalogPoll.switchedOff(context);
    expect(state.catalog).toEqual({ operatingSystems: 0, locations: 0 });
    Object.assign(state.catalog, { operatingSystems: 7, locations: 3 });
    await catalogPoll.run(context, new AbortController().signal);
    expect(state.catalog).toEqual({ operatingSystems: 0, locations: 0 });
  });
});

describe('the firewall poll after a reload removed a service', () => {
  it('forgets its firewall state and its attack log (GET /api/v1/attacks)', async () => {
    const collectors = { firewall: true, graphs: true, catalog: true };
    const services = { colocationIds: ['c1'], transitIds: [] as string[] };
    const schedules = { ...DEFAULT_SCHEDULES, firewall_under_attack: DEFAULT_SCHEDULES.firewall };
    const state = new AccountState({ schedules, services, collectors }, () => 1_000);
    const metrics = createMetrics(new Registry());
    const ref = { serviceType: 'colocation' as const, serviceId: 'c1' };
    const events = [{ id: 'e1', ip: '192.0.2.1', raw: '', fields: {} }];
    collectFirewallHistory(state.firewallState, { account: 'a', metrics }, ref, events, {
      limits: { maxIpsPerService: 5, ipRetentionMs: 1e9 },
      now: 1_000,
    });
    state.attacks.record(ref, events, 1_000);
    // A reload removes c1 (daemon/reload.ts assigns the new lists): no service is left to request.
    Object.assign(services, { colocationIds: [] });
    const context = {
      account: 'a',
      state,
      metrics,
      config: { collectors, schedules },
      client: { budget: undefined, concurrency: 1 },
      now: () => 1_000,
    } as unknown as PollContext;
    await firewallPoll.run(context, new AbortController().signal);
    expect(state.firewallState.services.size).toBe(0);
    expect(state.attacks.services.size).toBe(0);
  });
});
