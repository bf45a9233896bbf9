/**
 * The pure parts of `npm run soak` (bench/soak-goals.ts): the series an inventory implies, how a run is cut,
 * and the goals its samples are judged by. The soak itself runs for an hour and is not in `npm test`.
 */
import { describe, expect, it } from 'vitest';
import {
  countSeries,
  evaluateSoak,
  expectedSeries,
  type SoakSample,
  soakPlan,
  stuckPolls,
} from '../../../bench/soak-goals.ts';

const expected = expectedSeries({ serverIps: [2, 3], services: 2, retainedServiceIps: 1, graphsPerServer: 2 });

/** A run of `minutes` sampled every 30 s; `change` alters the sample at a time. */
function run(minutes: number, change: (s: SoakSample) => void = () => {}): SoakSample[] {
  return Array.from({ length: minutes * 2 }, (_, i) => {
    const at = (i + 1) * 30;
    const s: SoakSample = {
      at,
      rssMb: 150,
      heapMb: 30,
      fds: 40,
      series: 800,
      families: { ...expected },
      expected: { ...expected },
      dbBytes: 100_000,
      stateFiles: 60,
      pollLastSuccess: { servers: 1000 + at, firewall: 1000 + at },
    };
    change(s);
    return s;
  });
}
const judge = (samples: SoakSample[], minutes: number, unhandled: string[] = []) =>
  Object.fromEntries(
    evaluateSoak(samples, minutes, { pollsChecked: ['servers', 'firewall'], unhandled, upstreamSockets: 16 }).map(
      (g) => [g.what, g.pass],
    ),
  );

describe('the soak', () => {
  it('expects the series per family from the inventory: servers, services, IPs, retained IPs, graphs', () => {
    expect(expected).toEqual({
      baremetal_server_info: 2,
      baremetal_server_memory_bytes: 2,
      baremetal_server_ips: 2,
      baremetal_firewall_history_up: 4,
      baremetal_firewall_history_last_success_timestamp_seconds: 4,
      baremetal_firewall_attack_events_last_hour: 6,
      baremetal_firewall_attack_events_total: 6,
      baremetal_graph_last_success_timestamp_seconds: 4,
    });
  });

  it('counts the samples of an exposition per family, histogram lines under theirs', () => {
    const text = [
      '# HELP a_info x',
      '# TYPE a_info gauge',
      'a_info{id="1"} 1',
      'a_info{id="2"} 1',
      '# TYPE d histogram',
      'd_bucket{le="1"} 0',
      'd_sum 0',
      'd_count 0',
      '',
    ].join('\n');
    const { total, families } = countSeries(text);
    expect(total).toBe(5);
    expect(Object.fromEntries(families)).toEqual({ a_info: 2, d: 3 });
  });

  it('warms up a sixth of the run, 10 minutes at most, and cuts it in quarters', () => {
    expect(soakPlan(60)).toEqual({ warmupS: 600, quarterS: 900 });
    expect(soakPlan(3)).toEqual({ warmupS: 30, quarterS: 45 });
    expect(soakPlan(120).warmupS).toBe(600);
    expect(() => soakPlan(0)).toThrow(RangeError);
  });

  it('passes a flat run of 60 and of 3 minutes', () => {
    for (const minutes of [60, 3]) expect(Object.values(judge(run(minutes), minutes)).every(Boolean)).toBe(true);
  });

  it('misses when RSS, heap or the database grow more than 5 % from the second quarter to the last', () => {
    const grown = run(60, (s) => {
      if (s.at >= 2700) Object.assign(s, { rssMb: 160, heapMb: 32, dbBytes: 106_000 });
    });
    const verdict = judge(grown, 60);
    expect(verdict.RSS).toBe(false);
    expect(verdict['live heap after a full GC']).toBe(false);
    expect(verdict['state database size']).toBe(false);
    // A warm-up's growth is not held against the run.
    const warm = run(60, (s) => {
      if (s.at < 600) s.rssMb = 50;
    });
    expect(judge(warm, 60).RSS).toBe(true);
  });

  it('misses when descriptors grow past the slack, a series stays above the inventory, or a poll stalls', () => {
    const fds = run(60, (s) => {
      if (s.at >= 2700) s.fds = 45;
    });
    expect(judge(fds, 60)['open file descriptors']).toBe(false);
    // A leak of one descriptor every 10 minutes: the median rises by 3 between the quarters.
    const leak = run(60, (s) => {
      s.fds = 40 + Math.floor(s.at / 600);
    });
    expect(judge(leak, 60)['open file descriptors']).toBe(false);
    // A burst of pool sockets for a minute and a half, back to 40 (the 60-minute run of 2026-11-26): flat.
    const burst = run(60, (s) => {
      if (s.at >= 3300 && s.at < 3390) s.fds = 50;
    });
    expect(judge(burst, 60)['open file descriptors']).toBe(true);
    // A burst past the upstream pool's size is more than its sockets.
    const flood = run(60, (s) => {
      if (s.at === 3300) s.fds = 40 + 17;
    });
    expect(judge(flood, 60)['open file descriptors']).toBe(false);
    const stale = run(60, (s) => {
      if (s.at === 1800) s.families.baremetal_server_info = 3;
    });
    expect(judge(stale, 60)['inventory series = what the simulator implies']).toBe(false);
    const missing = run(60, (s) => {
      if (s.at % 900 === 0) s.families.baremetal_graph_last_success_timestamp_seconds = 3;
    });
    expect(judge(missing, 60)['inventory series = what the simulator implies']).toBe(true);
    const stalled = run(60, (s) => {
      if (s.at >= 1200) s.pollLastSuccess.firewall = 2200;
    });
    expect(stuckPolls(stalled.slice(20), ['servers', 'firewall'])).toEqual(['firewall']);
    expect(judge(stalled, 60)['no poll stuck']).toBe(false);
    expect(judge(run(60), 60, ['level=fatal msg="uncaught"'])['no unhandled error in the log']).toBe(false);
  });
});
