/**
 * The bench smoke (issue 43): `node bench/run.ts --smoke` runs every row of `npm run bench` once at its smallest
 * size and prints the table without judging a goal, so that a row that throws — as the HA row did for weeks
 * once the circuit breaker landed — fails `npm test`. Nothing here is timed: the rows' figures are not judged.
 * The PostgreSQL rows need Debian's postgresql: skipped with a reason when it is absent, a failure under CI=true
 * (helpers/postgres.ts), where .ci/run installs it, and libjemalloc2 for the shipped allocator.
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ROOT, startGroup } from '../helpers/packaging.js';
import { requirePostgres } from '../helpers/postgres.js';

/** The rows every smoke prints, by the start of their name; the PostgreSQL ones when it is installed. */
const ROWS = [
  'servers+firewall cycle, first',
  'servers+firewall cycle, steady',
  'main-thread CPU per request, steady cycle',
  'RSS after a cycle',
  'RSS after a cycle ÷ bare Node',
  'longest event-loop block during a cycle',
  '/metrics p99 ÷ static buffer',
  '/metrics p99 during a cycle ÷ idle',
  'small account RSS ÷ floor',
  'small account RSS, last cycle',
  'busy small account RSS steady max ÷ floor',
  'busy small account RSS steady max ÷ bare Node',
  'graph check CPU per image',
  'RSS after a graphs poll',
  'RSS after a graphs poll ÷ bare Node',
  '/metrics p50, wrong-Basic flood, basic user',
  '/metrics p99, wrong-Basic flood, bearer only',
  'valid sporadic basic-auth users refused',
  'budget: requests/s sent',
  'budget: 429s seen',
  'two accounts × 10 servers',
  'peak RSS growth, one 40 MiB reply refused',
  'webhook → upstream call p95, SQLite',
  'scope: exponential hostname pattern',
  'decode CPU per reply ÷ JSON.parse: server list',
  'decode CPU per reply ÷ JSON.parse: firewall history',
];
const POSTGRES_ROWS = [
  'webhook → upstream call p95, PostgreSQL',
  'HA failover: SIGKILL of the leader',
  'shared accounts: most loaded of 3 replicas ÷ 1 replica, API requests',
  'shared accounts: most loaded of 3 replicas ÷ 1 replica, CPU seconds',
  'shared accounts: longest gap between polls of an account, rolling restart',
];

describe('bench smoke', () => {
  const postgres = requirePostgres();

  it('runs every row of npm run bench once and prints the table', { timeout: 300_000 }, async () => {
    const run = startGroup(process.execPath, ['bench/run.ts', '--smoke'], { cwd: ROOT, env: { ...process.env } });
    const exited = once(run.child, 'exit');
    let code: unknown;
    try {
      [code] = await exited;
    } finally {
      await run.stop(5_000); // and anything the bench left behind in its process group
    }
    const output = run.output();
    expect(code, output).toBe(0);
    const table = output.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| measure'));
    for (const row of [...ROWS, ...(postgres.skip ? [] : POSTGRES_ROWS)])
      expect(
        table.some((line) => line.startsWith(`| ${row}`)),
        `row "${row}" in:\n${table.join('\n')}`,
      ).toBe(true);
    // Every row measured something: a figure, not NaN (a row that measured nothing is no smoke).
    for (const line of table.filter((l) => !/^\| \d/.test(l))) expect(line.split(' | ')[1]).not.toMatch(/NaN/);
    if (postgres.skip) expect(output).toContain('PostgreSQL rows not measured');
    // The shares CPU row is judged against its floor's split (bench/shares-floor.mjs), which ran and sent requests.
    else
      expect(table.find((line) => line.startsWith(`| ${POSTGRES_ROWS[3]}`))).toMatch(
        /the floor of the same requests \(bench\/shares-floor\.mjs\), one [1-9]\d* \/ .*beyond a third of the one: replicas -?\d+\.\d\d s, floor -?\d+\.\d\d s \| [^|]*the floor's \d+\.\d\d/,
      );
    if (process.env.CI === 'true') expect(output).toContain('allocator: jemalloc');
  });
});
