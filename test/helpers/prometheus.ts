import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { eventually, freePort, startProcess } from './processes.js';

/** One sample of an instant query's vector result. */
export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/** Runs an instant query on the Prometheus at `promUrl`; throws when Prometheus reports an error. */
export async function promQuery(promUrl: string, expr: string): Promise<Sample[]> {
  const res = await request(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.body.json()) as { status: string; data: { result: Sample[] } };
  if (body.status !== 'success') throw new Error(`query ${expr} failed: ${JSON.stringify(body)}`);
  return body.data.result;
}

/**
 * Debian's Prometheus (`binary`) on a free loopback port with `config` (the YAML of `prometheus.yml`; a
 * function of nothing, written to `<dir>/prometheus.yml`) and its TSDB under `dir`; resolves once `ready` says
 * so (default: the `baremetal` job's target is up). `stop()` ends it.
 */
export async function startPrometheus(
  binary: string,
  dir: string,
  config: string,
  ready: (query: (expr: string) => Promise<Sample[]>) => Promise<boolean> = async (query) =>
    (await query('up{job="baremetal"} == 1')).length === 1,
): Promise<{
  url: string;
  query: (expr: string) => Promise<Sample[]>;
  stop: () => Promise<void>;
  output: () => string;
}> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  writeFileSync(join(dir, 'prometheus.yml'), config);
  const prom = startProcess(binary, [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'tsdb')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  const query = (expr: string) => promQuery(url, expr);
  await eventually(`Prometheus to be ready (${prom.output()})`, async () => ((await ready(query)) ? true : undefined));
  return { url, query, stop: () => prom.stop(), output: prom.output };
}

/** A `prometheus.yml` scraping `target` (host:port) every second as job `baremetal`. */
export const scrapeConfig = (target: string) =>
  `global: { scrape_interval: 1s, evaluation_interval: 1s }\nscrape_configs:\n  - job_name: baremetal\n    static_configs: [{ targets: ['${target}'] }]\n`;
