/** The simulator's churn (issue 32, `npm run soak`): what one step changes, counted on the simulator's state. */
import { describe, expect, it } from 'vitest';
import { Churn } from '../../../src/simulator/churn.js';
import { SimulatorState } from '../../../src/simulator/state.js';

const START = Date.UTC(2026, 10, 25, 12, 0, 0);

function fleet() {
  const clock = { now: START };
  const state = new SimulatorState({ servers: 40, colocations: 0, transits: 0, attackRate: 0, now: () => clock.now });
  return { state, clock };
}

describe('simulator churn', () => {
  it('adds and removes as many servers, moves IPs between servers, starts attacks on ~3 % of IPs', () => {
    const { state } = fleet();
    const step = new Churn(state, { seed: 3 }).step();
    expect(step.added).toHaveLength(2);
    expect(step.removed).toHaveLength(2);
    expect(state.servers.size).toBe(40);
    for (const id of step.removed) expect(state.service('dedicated', id)).toBeUndefined();
    for (const id of step.added) expect(state.service('dedicated', id)?.ips).toHaveLength(2);
    expect(step.moved).toHaveLength(2);
    for (const { ip, from, to } of step.moved) {
      expect(state.servers.get(from)?.ips ?? []).not.toContain(ip);
      expect(state.service('dedicated', to)?.ips).toContain(ip);
    }
    // 3 % of 80 IPs, rounded: 2; each has events in its history from now on.
    expect(step.attacksStarted).toHaveLength(2);
    for (const { ip, serverId } of step.attacksStarted) {
      expect(state.servers.get(serverId)?.ips).toContain(ip);
      expect(state.eventsFor(ip, 60)).toHaveLength(1);
    }
    const ips = [...state.servers.values()].flatMap((s) => s.ips);
    expect(new Set(ips).size).toBe(ips.length);
  });

  it('ends each attack within its steps (at most 3), and an attack whose server leaves at once', () => {
    const { state, clock } = fleet();
    const churn = new Churn(state, { seed: 5, serverShare: 0, moveShare: 0 });
    const started = churn.step().attacksStarted.map((a) => a.ip);
    const ended: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock.now += 60_000;
      ended.push(...churn.step().attacksEnded.map((a) => a.ip));
    }
    expect(ended).toEqual(expect.arrayContaining(started));
    clock.now += 60_000;
    for (const ip of started) expect(state.eventsFor(ip, 60)).toEqual([]);
  });

  it('is repeatable for a seed, and refuses a negative knob', () => {
    const a = new Churn(fleet().state, { seed: 9 }).step();
    const b = new Churn(fleet().state, { seed: 9 }).step();
    expect(a).toEqual(b);
    expect(() => new Churn(fleet().state, { attackShare: -1 })).toThrow(RangeError);
  });
});
