import { describe, expect, it } from 'vitest';
import { configFileSchema, DEFAULT_SCHEDULES, JOB_NAMES } from '../../../src/config/schema.js';
import { firewallUnderAttackPoll } from '../../../src/polls/firewall.js';
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
