/**
 * The daemon's memory (bench/README.md, docs/operations.md "Sizing") assumes V8's young generation capped by
 * `--max-semi-space-size=2` (without a cap a 10,000-server cycle takes ~100 MB more RSS; 8, the cap before issue
 * 53, cost a busy small account ~15 MB more) and jemalloc returning freed pages promptly (`MALLOC_CONF`). The flag
 * is the launcher's shebang (src/main.ts, compiled to the `bin`); every other way the daemon is started must pass
 * it too. The allocator's settings are the image's `ENV MALLOC_CONF`; the systemd unit sets the same, and the
 * bench reads both from where they are shipped (bench/shipped.ts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
/** The flags of the launcher's shebang: the source of truth. */
const SHEBANG = /^#!\/usr\/bin\/env -S node( --[^\s]+)+\n/;
const launcherFlags = SHEBANG.exec(read('src/main.ts'))?.[0].split(' ').slice(3).join(' ').trim();

describe('the V8 flag the memory figures assume', () => {
  it('is set by the launcher, whose shebang becomes the bin', () => {
    expect(launcherFlags).toBe('--max-semi-space-size=2');
    const pkg = JSON.parse(read('package.json')) as { bin: Record<string, string> };
    expect(pkg.bin['baremetal-exporter']).toBe('dist/main.js');
  });

  it.each([
    {
      name: 'the command line module (run directly)',
      words: () => SHEBANG.exec(read('src/cli/main.ts'))?.[0].trim().split(' '),
    },
    {
      name: 'the container image (ENTRYPOINT)',
      words: () => {
        const line = read('Dockerfile')
          .split('\n')
          .find((l) => l.startsWith('ENTRYPOINT '));
        return line ? (JSON.parse(line.slice('ENTRYPOINT '.length)) as string[]) : undefined;
      },
    },
    {
      name: 'the systemd unit (ExecStart)',
      words: () =>
        read('examples/baremetal-exporter.service')
          .split('\n')
          .find((l) => l.startsWith('ExecStart='))
          ?.split(' '),
    },
    {
      name: 'npm run demo',
      words: () => (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.demo?.split(' '),
    },
  ])('is passed by $name', ({ words }) => {
    const found = words() ?? [];
    // The flag comes before the script: after it, it would be an argument of the daemon, not of node.
    const script = found.findIndex((w) => w.endsWith('dist/main.js'));
    expect(found.slice(0, script === -1 ? undefined : script)).toContain(launcherFlags);
  });

  it('is not overridden by the Kubernetes deployment (it keeps the image ENTRYPOINT)', () => {
    const deployment = parse(read('deploy/kubernetes/deployment.yaml')) as {
      spec: { template: { spec: { containers: Array<{ command?: unknown }> } } };
    };
    for (const container of deployment.spec.template.spec.containers) expect(container.command).toBeUndefined();
  });
});

describe('the allocator settings the memory figures assume', () => {
  // The runtime stage only: an ENV of the build stage never reaches the image that runs.
  const runtime = read('Dockerfile')
    .split(/^FROM /m)
    .at(-1)!;
  const image = /^ENV MALLOC_CONF=(\S+)$/m.exec(runtime)?.[1];

  it("are the image's runtime stage's, with jemalloc preloaded there", () => {
    // jemalloc's default is dirty_decay_ms:10000, which held a busy small account's peak ~12 MB higher.
    expect(image).toBe('dirty_decay_ms:0,muzzy_decay_ms:0');
    expect(runtime).toMatch(/^ENV LD_PRELOAD=\S*libjemalloc\.so\.2$/m);
  });

  it('are the same in the systemd unit, beside its LD_PRELOAD', () => {
    const unit = read('examples/baremetal-exporter.service');
    expect(/^Environment=MALLOC_CONF=(\S+)$/m.exec(unit)?.[1]).toBe(image);
    expect(unit).toMatch(/^Environment=LD_PRELOAD=\S*libjemalloc\.so\.2$/m);
  });
});
