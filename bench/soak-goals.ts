/**
 * The pure parts of `npm run soak` (bench/soak.ts): the series the simulator's inventory implies, how a run
 * of a given length is cut (warm-up, quarters), and the goals a run's samples are judged by. No I/O, so
 * test/unit/soak-goals.test.ts covers them in `npm test`; the soak itself is not in `npm test`.
 */
import { percentile } from './options.ts';

/** What the daemon should see of the simulator at a sample, as bench/soak.ts reads it from its state. */
export interface InventoryView {
  /** IPs of each dedicated server in scope */
  serverIps: number[];
  /** colocation and transit services configured */
  services: number;
  /** colocation and transit IPs with events within the hour window plus `firewall.ip_retention` */
  retainedServiceIps: number;
  /** graph images per server (graphs.types × graphs.scales) */
  graphsPerServer: number;
}

/** The metric families whose series the inventory decides, and how many each should have. */
export function expectedSeries(view: InventoryView): Record<string, number> {
  const servers = view.serverIps.length;
  const ips = view.serverIps.reduce((a, b) => a + b, 0);
  const services = servers + view.services;
  const attackIps = ips + view.retainedServiceIps;
  return {
    baremetal_server_info: servers,
    baremetal_server_memory_bytes: servers,
    baremetal_server_ips: servers,
    baremetal_firewall_history_up: services,
    baremetal_firewall_history_last_success_timestamp_seconds: services,
    baremetal_firewall_attack_events_last_hour: attackIps,
    baremetal_firewall_attack_events_total: attackIps,
    baremetal_graph_last_success_timestamp_seconds: servers * view.graphsPerServer,
  };
}

/** Series per family name in an exposition (samples only; `_bucket`/`_sum`/`_count` under their family). */
export function countSeries(exposition: string): { total: number; families: Map<string, number> } {
  const families = new Map<string, number>();
  let family = '';
  let total = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('# TYPE ')) family = line.split(' ')[2] ?? '';
    if (line === '' || line.startsWith('#')) continue;
    total++;
    families.set(family, (families.get(family) ?? 0) + 1);
  }
  return { total, families };
}

/** One sample of a soak, taken every 30 s. */
export interface SoakSample {
  /** seconds since the daemon started */
  at: number;
  rssMb: number;
  /** live heap after a forced full GC, MB */
  heapMb: number;
  fds: number;
  /** every series of /metrics */
  series: number;
  /** the series of the inventory-driven families, measured and expected */
  families: Record<string, number>;
  expected: Record<string, number>;
  /** SQLite: the journal's pages in use; PostgreSQL: the tables' total size; bytes */
  dbBytes: number;
  /** files under state_dir besides the journal (graph images, event-id files) */
  stateFiles: number;
  /** poll → unix seconds of its last success */
  pollLastSuccess: Record<string, number>;
}

/** How a run of `minutes` is cut: the warm-up is a sixth of it (10 min of 60), quarters of the whole run. */
export function soakPlan(minutes: number): { warmupS: number; quarterS: number } {
  if (!(Number.isFinite(minutes) && minutes > 0))
    throw new RangeError(`--minutes: expected a number > 0, got ${minutes}`);
  return { warmupS: Math.min(600, (minutes * 60) / 6), quarterS: (minutes * 60) / 4 };
}

/** One goal's verdict, as the soak's table prints it. */
export interface Goal {
  what: string;
  measured: string;
  rule: string;
  pass: boolean;
}

/** Growth allowed from the second quarter to the last (RSS, heap, database size). */
export const FLAT = 1.05;
/**
 * Descriptors the last quarter's median may have above the second's. A leak raises the descriptors held between
 * bursts, so the median is judged: the upstream pool's keep-alive sockets come and go in bursts of up to
 * `upstream.concurrency` for a minute or so (41 → 51 → 41 in one 60-minute run), which a max would count as
 * growth; no burst may pass the pool's size (`upstreamSockets` of evaluateSoak).
 */
export const FD_SLACK = 2;

/** Share of samples whose inventory-driven series must match exactly (the rest: a new item's first fetch failed). */
export const SERIES_MATCH = 0.9;

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
/** The median (nearest rank: the lower middle of an even count); NaN for none. */
const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

/** The samples of quarter `q` (1–4) of a run of `minutes`, by their time. */
export function quarter(samples: SoakSample[], minutes: number, q: 1 | 2 | 3 | 4): SoakSample[] {
  const { quarterS } = soakPlan(minutes);
  return samples.filter((s) => s.at >= (q - 1) * quarterS && (q === 4 || s.at < q * quarterS));
}

function ratioGoal(
  what: string,
  unit: string,
  samples: SoakSample[],
  minutes: number,
  value: (s: SoakSample) => number,
): Goal {
  const second = quarter(samples, minutes, 2).map(value);
  const last = quarter(samples, minutes, 4).map(value);
  if (second.length === 0 || last.length === 0)
    return { what, measured: 'no samples in a quarter', rule: `last quarter ÷ second ≤ ${FLAT}`, pass: false };
  const ratio = mean(last) / mean(second);
  return {
    what,
    measured: `${ratio.toFixed(3)} × (${mean(second).toFixed(1)} → ${mean(last).toFixed(1)} ${unit}, quarter means)`,
    rule: `last quarter ÷ second ≤ ${FLAT}`,
    pass: ratio <= FLAT,
  };
}

/** Polls whose last success did not move between two samples after the warm-up (those polled at least as often). */
export function stuckPolls(samples: SoakSample[], pollsChecked: string[]): string[] {
  const stuck = new Set<string>();
  for (let i = 1; i < samples.length; i++)
    for (const poll of pollsChecked) {
      const before = samples[i - 1]!.pollLastSuccess[poll];
      const now = samples[i]!.pollLastSuccess[poll];
      if (before === undefined || now === undefined || now <= before) stuck.add(poll);
    }
  return [...stuck];
}

/** Samples after the warm-up whose inventory-driven series differ from the expected, and those above it. */
export function seriesMismatches(samples: SoakSample[]): { differ: SoakSample[]; above: string[] } {
  const differ: SoakSample[] = [];
  const above: string[] = [];
  for (const s of samples) {
    const families = Object.keys(s.expected);
    if (families.some((f) => (s.families[f] ?? 0) !== s.expected[f])) differ.push(s);
    for (const f of families)
      if ((s.families[f] ?? 0) > s.expected[f]!)
        above.push(`${f} ${s.families[f]} > ${s.expected[f]} at ${s.at.toFixed(0)} s`);
  }
  return { differ, above };
}

/**
 * Every goal of a run of `minutes` over its samples: memory and database flat (last quarter ÷ second),
 * descriptors flat, the inventory-driven series as expected, no poll stuck, no unhandled error.
 * `upstreamSockets`: the daemon's `upstream.concurrency`, the most descriptors a burst of pool sockets adds.
 */
export function evaluateSoak(
  all: SoakSample[],
  minutes: number,
  options: { pollsChecked: string[]; unhandled: string[]; upstreamSockets: number },
): Goal[] {
  const { warmupS } = soakPlan(minutes);
  const samples = all.filter((s) => s.at >= warmupS);
  const fds2 = quarter(samples, minutes, 2).map((s) => s.fds);
  const fds4 = quarter(samples, minutes, 4).map((s) => s.fds);
  const [median2, median4, max4] = [median(fds2), median(fds4), Math.max(...fds4)];
  const { differ, above } = seriesMismatches(samples);
  const matched = samples.length === 0 ? 0 : 1 - differ.length / samples.length;
  const stuck = stuckPolls(samples, options.pollsChecked);
  const other = (s: SoakSample) => s.series - Object.values(s.families).reduce((a, b) => a + b, 0);
  return [
    ratioGoal('RSS', 'MB', samples, minutes, (s) => s.rssMb),
    ratioGoal('live heap after a full GC', 'MB', samples, minutes, (s) => s.heapMb),
    {
      what: 'open file descriptors',
      measured: `median ${median2} in the second quarter, ${median4} in the last (max ${Math.max(...fds2)}, ${max4})`,
      rule: `median: last ≤ second + ${FD_SLACK}; max ≤ second's median + ${options.upstreamSockets} (upstream.concurrency)`,
      pass:
        fds2.length > 0 &&
        fds4.length > 0 &&
        median4 <= median2 + FD_SLACK &&
        max4 <= median2 + options.upstreamSockets,
    },
    {
      what: 'inventory series = what the simulator implies',
      measured: `${(matched * 100).toFixed(0)} % of ${samples.length} samples exact; ${above.length} above${above.length ? `: ${above.slice(0, 3).join('; ')}` : ''}`,
      rule: `exact in ≥ ${SERIES_MATCH * 100} %, never above`,
      pass: samples.length > 0 && matched >= SERIES_MATCH && above.length === 0,
    },
    ratioGoal('other series (process, polls, requests…)', 'series', samples, minutes, other),
    ratioGoal('state database size', 'KiB', samples, minutes, (s) => s.dbBytes / 1024),
    ratioGoal('files under state_dir', 'files', samples, minutes, (s) => s.stateFiles),
    {
      what: 'no poll stuck',
      measured: stuck.length
        ? `stuck: ${stuck.join(', ')}`
        : `${options.pollsChecked.join(', ')} advanced at every sample`,
      rule: 'last success advances between samples',
      pass: stuck.length === 0 && options.pollsChecked.length > 0,
    },
    {
      what: 'no unhandled error in the log',
      measured: options.unhandled.length
        ? `${options.unhandled.length}: ${options.unhandled[0]!.slice(0, 160)}`
        : 'none',
      rule: 'none',
      pass: options.unhandled.length === 0,
    },
  ];
}
