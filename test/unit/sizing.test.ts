/**
 * Issue 22, item 7: the Kubernetes requests/limits and the systemd MemoryHigh/MemoryMax are the ones the sizing
 * table of docs/operations.md gives for 10,000 servers, and every row of the table names its memory settings.
 */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** The rows of the "Sizing" table: account size → its Kubernetes and systemd memory settings. */
function sizingRows(): Map<string, { request: string; limit: string; high: string; max: string }> {
  const section = read('docs/operations.md').split('## Sizing')[1]!.split('\n## ')[0]!;
  const rows = new Map<string, { request: string; limit: string; high: string; max: string }>();
  for (const line of section.split('\n').filter((l) => /^\| [\d,]+ servers \|/.test(l))) {
    const cells = line.split('|').map((c) => c.trim());
    const k8s = /^`memory: (\w+)` \/ `(\w+)`$/.exec(cells[5]!);
    const systemd = /^`(\w+)` \/ `(\w+)`$/.exec(cells[6]!);
    if (!k8s || !systemd) throw new Error(`sizing row without memory settings: ${line}`);
    rows.set(cells[1]!, { request: k8s[1]!, limit: k8s[2]!, high: systemd[1]!, max: systemd[2]! });
  }
  return rows;
}

describe('sizing', () => {
  it('has a row for 100, 1,000 and 10,000 servers', () => {
    expect([...sizingRows().keys()]).toEqual(['100 servers', '1,000 servers', '10,000 servers']);
  });

  it('ships the 10,000-server row in deploy/kubernetes and in the systemd unit', () => {
    const row = sizingRows().get('10,000 servers')!;
    const deployment = parseAllDocuments(read('deploy/kubernetes/deployment.yaml'))
      .map((d) => d.toJS())
      .find((d) => d.kind === 'Deployment');
    const { resources } = deployment.spec.template.spec.containers[0];
    expect(resources).toEqual({ requests: { cpu: '100m', memory: row.request }, limits: { memory: row.limit } });
    const unit = read('examples/baremetal-exporter.service');
    expect(unit.match(/^MemoryHigh=.*$/gm)).toEqual([`MemoryHigh=${row.high}`]);
    expect(unit.match(/^MemoryMax=.*$/gm)).toEqual([`MemoryMax=${row.max}`]);
  });
});

describe('the allocator the sizing assumes', () => {
  it('is jemalloc, preloaded by the image and by the systemd unit', () => {
    const dockerfile = read('Dockerfile');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toMatch(/apt-get install -y --no-install-recommends libjemalloc2/);
    expect(runtime).toContain('ln -s "$(dpkg -L libjemalloc2');
    expect(runtime.match(/^ENV LD_PRELOAD=.*$/gm)).toEqual(['ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2']);
    const unit = read('examples/baremetal-exporter.service');
    expect(unit.match(/^Environment=LD_PRELOAD=.*$/gm)).toEqual([
      'Environment=LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
    ]);
  });
});
