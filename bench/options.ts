/** What bench/run.ts and bench/size.ts share: the options of a size, a row, the result of a size. */

/** The options of one size (bench/size.ts), which run.ts passes on to each size's process. */
export const SIZE_OPTIONS = {
  servers: { type: 'string', default: '10000' },
  ips: { type: 'string', default: '2' },
  latency: { type: 'string', default: '5' },
  concurrency: { type: 'string', default: '16' },
  scrapes: { type: 'string', default: '300' },
  flood: { type: 'string', default: '16' },
  budget: { type: 'string', default: '200' },
  'budget-servers': { type: 'string', default: '2000' },
  /** the least time the flood rows scrape for, seconds (so that the flood reaches its steady state) */
  'flood-seconds': { type: 'string', default: '5' },
  /** the sporadic-users row: valid users, each logging in once, and the flooding loops beside them */
  'sporadic-users': { type: 'string', default: '20' },
  'sporadic-loops': { type: 'string', default: '40' },
} as const;

/**
 * `npm run bench -- --smoke` (and the bench smoke in `npm test`, test/smoke/bench-smoke.test.ts): every
 * row once at its smallest useful size, goals not judged — so that a row that throws fails the suite. The size
 * options it runs with; the other rows' sizes are in run.ts.
 */
export const SMOKE_SIZE = {
  servers: '20',
  scrapes: '5',
  flood: '2',
  'budget-servers': '40',
  'flood-seconds': '0.2',
  'sporadic-users': '2',
  'sporadic-loops': '2',
} as const;

/** A bench row: what, the figure, what it is compared with, the target and whether higher is worse. */
export interface Row {
  what: string;
  measured: number;
  unit: string;
  reference: string;
  target: number;
  /** the lowest passing figure, when there is one */
  min?: number;
  rule: string;
  /** printed for comparison, not a goal (a configuration the daemon does not ship) */
  comparison?: true;
}

/** What bench/small.mjs prints. */
export interface SmallResult {
  servers: number;
  images: number;
  /** RSS after each cycle, MB */
  rssMb: number[];
  /** every poll's outcome in every cycle */
  outcomes: string[];
  /** wall time of the slowest cycle, ms */
  cycleMaxMs: number;
  /** main-thread CPU of all cycles, ms */
  cpuMs: number;
  attacksPerHour: number;
}

/** What bench/size.ts prints. */
export interface SizeResult {
  servers: number;
  series: number;
  requests: number;
  outcomes: string[];
  coldMs: number;
  warmMs: number;
  floorMs: number;
  /** main-thread CPU of the first and steady cycle and of the floor loop, ms */
  cpuColdMs: number;
  cpuWarmMs: number;
  /** main-thread CPU of the rendering that ends the first and the steady cycle, ms; its longest turn, ms */
  renderCpuColdMs: number;
  renderCpuWarmMs: number;
  renderBlockMaxMs: number;
  floorCpuMs: number;
  rssMb: number;
  rssSteadyMb: number;
  /** the graphs poll after the steady cycle: its outcome, wall time in ms, RSS after it */
  graphsOutcome: string;
  graphsMs: number;
  /** CPU of the whole process (libvips' threads included) during the graphs poll, ms */
  graphsCpuMs: number;
  rssGraphsMb: number;
  heapMb: number;
  heapPerServerKb: number;
  blockMaxMs: number;
  delayMaxMs: number;
  delayP99Ms: number;
  expositionBytes: number;
  gzipBytes: number;
  scrapeIdleP50: number;
  scrapeIdleP99: number;
  scrapeDuringP50: number;
  scrapeDuringP99: number;
  scrapesDuring: number;
  /** the same, asking for gzip as Prometheus does: idle, and during a third (steady) cycle */
  scrapeIdleGzipP99: number;
  scrapeDuringGzipP99: number;
  scrapesDuringGzip: number;
  /** servers/firewall outcomes of that third cycle */
  gzipCycleOutcomes: string[];
  staticP50: number;
  staticP99: number;
  rows: Row[];
}

/** The `p`th percentile (nearest rank) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}
