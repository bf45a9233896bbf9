import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';

const read = (path: string) => readFileSync(new URL(`../../../examples/${path}`, import.meta.url), 'utf8');

describe('examples/config.yml', () => {
  it('is a valid config whose values are the documented defaults', () => {
    const example = parseConfigText(read('config.yml'), { BAREMETAL_API_KEY: 'k' });
    const defaults = parseConfigText('upstream: { base_url: "https://api.provider.example" }', {
      BAREMETAL_API_KEY: 'k',
    });
    expect(example).toEqual(defaults);
  });
});

describe('examples/ha (two replicas on one PostgreSQL)', () => {
  const DATABASE_URL = 'postgres://baremetal:s3cret@127.0.0.1:5432/baremetal';
  /** The secret files the replica configs name, as the README's steps create them. */
  const FILES: Record<string, string> = {
    '/etc/baremetal-exporter/api-key': 'k',
    '/etc/baremetal-exporter/database-url': `${DATABASE_URL}\n`,
    '/etc/baremetal-exporter/alertmanager-token': 'a-token-of-24-characters',
  };
  const load = (file: string) => {
    const opened: string[] = [];
    const config = parseConfigText(read(`ha/${file}`), {}, (path) => {
      opened.push(path);
      if (!(path in FILES)) throw new Error(`unexpected file ${path}`);
      return FILES[path]!;
    });
    return { config, opened };
  };
  const replicas = ['replica-a.yml', 'replica-b.yml'].map(load);
  const prometheus = parse(read('ha/prometheus.yml')) as {
    rule_files: string[];
    alerting: { alertmanagers: Array<{ static_configs: Array<{ targets: string[] }> }> };
    scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
  };
  const alertmanager = parse(read('ha/alertmanager.yml')) as Record<string, unknown> & {
    receivers: Array<{ name: string; webhook_configs?: Array<{ url: string; send_resolved: boolean }> }>;
  };
  const ports = replicas.map(({ config }) => config.web.port);

  it.each(replicas.map((r, i) => ({ name: ['replica-a.yml', 'replica-b.yml'][i], ...r })))(
    '$name is a valid config on PostgreSQL that reads its secrets from files',
    ({ config, opened }) => {
      expect(config.database).toEqual({
        kind: 'postgres',
        url: DATABASE_URL,
        redactedUrl: 'postgres://baremetal:***@127.0.0.1:5432/baremetal',
      });
      expect(new Set(opened)).toEqual(new Set(Object.keys(FILES)));
      expect(config.remediation.dryRun).toBe(false);
    },
  );

  it('the replicas differ only in their port and their state_dir (it is locked by one process)', () => {
    const [a, b] = replicas.map(({ config }) => config);
    expect(a!.web.port).not.toBe(b!.web.port);
    expect(a!.stateDir).not.toBe(b!.stateDir);
    expect({ ...b!, web: { ...b!.web, port: a!.web.port }, stateDir: a!.stateDir }).toEqual(a);
  });

  it('Prometheus scrapes both replicas in the job the rules select, and loads the rules', () => {
    const [job] = prometheus.scrape_configs;
    expect(job!.job_name).toBe('baremetal');
    expect(job!.static_configs.flatMap((c) => c.targets)).toEqual(ports.map((p) => `127.0.0.1:${p}`));
    expect(new URL(prometheus.rule_files[0]!, new URL('../../../examples/ha/', import.meta.url)).pathname).toBe(
      new URL('../../../alerts/baremetal.rules.yml', import.meta.url).pathname,
    );
  });

  it("Alertmanager has the main example's routes and inhibit rules, and sends remediation to both replicas", () => {
    const main = parse(read('alertmanager.yml')) as Record<string, unknown>;
    const { receivers, ...rest } = alertmanager;
    const { receivers: _, ...mainRest } = main;
    expect(rest).toEqual(mainRest);
    const remediation = receivers.find((r) => r.name === 'baremetal-remediation')!;
    expect(remediation.webhook_configs!.map((w) => w.url)).toEqual(
      ports.map((p) => `http://127.0.0.1:${p}/api/v1/alertmanager`),
    );
    expect(remediation.webhook_configs!.every((w) => w.send_resolved)).toBe(true);
  });

  it('the README starts each Alertmanager where Prometheus sends alerts, each naming the other as its peer', () => {
    const readme = read('ha/README.md');
    const peers = [
      ...readme.matchAll(/--web\.listen-address=(\S+) \\\n\s+--cluster\.listen-address=(\S+) --cluster\.peer=(\S+)/g),
    ];
    expect(peers.map((m) => m[1])).toEqual(prometheus.alerting.alertmanagers[0]!.static_configs[0]!.targets);
    expect(peers.map((m) => m[3])).toEqual([peers[1]![2], peers[0]![2]]);
    for (const port of ports) expect(readme).toContain(`127.0.0.1:${port}/metrics`);
  });
});

describe('examples/ha/shared-accounts (three replicas sharing the accounts out)', () => {
  const DATABASE_URL = 'postgres://baremetal:s3cret@127.0.0.1:5432/baremetal';
  const ACCOUNTS = ['main', 'reseller-eu', 'reseller-us'];
  const FILES: Record<string, string> = {
    ...Object.fromEntries(ACCOUNTS.map((a) => [`/etc/baremetal-exporter/${a}-key`, `key-of-${a}`])),
    '/etc/baremetal-exporter/database-url': `${DATABASE_URL}\n`,
    '/etc/baremetal-exporter/alertmanager-token': 'a-token-of-24-characters',
  };
  const NAMES = ['replica-a', 'replica-b', 'replica-c'];
  const replicas = NAMES.map((name) =>
    parseConfigText(read(`ha/shared-accounts/${name}.yml`), {}, (path) => {
      if (!(path in FILES)) throw new Error(`unexpected file ${path}`);
      return FILES[path]!;
    }),
  );
  const prometheus = parse(read('ha/shared-accounts/prometheus.yml')) as {
    rule_files: string[];
    scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
  };

  it.each(replicas.map((config, i) => ({ name: NAMES[i]!, config })))(
    '$name shares the accounts out on PostgreSQL under its own name',
    ({ name, config }) => {
      expect(config.database).toEqual({
        kind: 'postgres',
        url: DATABASE_URL,
        redactedUrl: 'postgres://baremetal:***@127.0.0.1:5432/baremetal',
        shares: { replica: name },
      });
      expect(config.accounts.map((a) => a.name)).toEqual(ACCOUNTS);
    },
  );

  it('the replicas differ only in their port, state_dir and replica name', () => {
    const [a, ...others] = replicas;
    for (const other of others) {
      expect(other.web.port).not.toBe(a!.web.port);
      expect(other.stateDir).not.toBe(a!.stateDir);
      expect({
        ...other,
        web: { ...other.web, port: a!.web.port },
        stateDir: a!.stateDir,
        database: a!.database,
      }).toEqual(a);
    }
  });

  it('Prometheus scrapes the three replicas in the job the rules select, and loads the rules', () => {
    const [job] = prometheus.scrape_configs;
    expect(job!.job_name).toBe('baremetal');
    expect(job!.static_configs.flatMap((c) => c.targets)).toEqual(replicas.map((c) => `127.0.0.1:${c.web.port}`));
    const base = new URL('../../../examples/ha/shared-accounts/', import.meta.url);
    expect(new URL(prometheus.rule_files[0]!, base).pathname).toBe(
      new URL('../../../alerts/baremetal.rules.yml', import.meta.url).pathname,
    );
  });
});
