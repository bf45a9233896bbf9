import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { ScrapeConfig } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1alpha1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, PersistentVolumeClaim, Service } from 'kubernetes-models/v1';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { kubernetesConfig } from '../../mixin/config.ts';
import { buildConfig } from '../../src/config/load.js';
import { requireBinary } from '../helpers/binaries.js';
import { tempDir } from '../helpers/tmp.js';

const DIR = 'deploy/kubernetes';
/** A parsed manifest the assertions walk freely: its shape is what the schema validation checks. */
// biome-ignore lint/suspicious/noExplicitAny: manifests are walked freely; their shape is what the schema validation checks
type Json = any;
interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

/** The kustomization rendered the simple way: its resources, in order, with its namespace and labels. */
function render(): Manifest[] {
  const kustomization = parse(readFileSync(`${DIR}/kustomization.yaml`, 'utf8')) as {
    namespace: string;
    resources: string[];
    labels: Array<{ pairs: Record<string, string> }>;
  };
  return kustomization.resources.flatMap((file) =>
    parseAllDocuments(readFileSync(`${DIR}/${file}`, 'utf8')).map((doc) => {
      const manifest = doc.toJS() as Manifest;
      manifest.metadata.namespace = kustomization.namespace;
      manifest.metadata.labels = {
        ...manifest.metadata.labels,
        ...Object.assign({}, ...kustomization.labels.map((l) => l.pairs)),
      };
      return manifest;
    }),
  );
}

/** Each kind's model: its validate() checks the object against the Kubernetes OpenAPI or the CRD's openAPIV3Schema. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  ConfigMap,
  PersistentVolumeClaim,
  Deployment,
  Service,
  ServiceMonitor,
  PrometheusRule,
  ScrapeConfig,
};
const validate = (m: Manifest) => new MODELS[m.kind]!(m as never).validate();

const manifests = render();
const byKind = (kind: string) => manifests.find((m) => m.kind === kind)! as Json;

describe('deploy/kubernetes', () => {
  it('holds a ConfigMap, a PVC, a Deployment, a Service, a ServiceMonitor, a PrometheusRule and ScrapeConfigs', () => {
    expect([...new Set(manifests.map((m) => m.kind))].sort()).toEqual(Object.keys(MODELS).sort());
  });

  it.each(manifests.map((m) => ({ kind: m.kind, manifest: m })))(
    '$kind validates against its schema',
    ({ manifest }) => {
      expect(() => validate(manifest)).not.toThrow();
    },
  );

  it.each([
    {
      name: 'a container port as a string',
      kind: 'Deployment',
      edit: (m: Json) => (m.spec.template.spec.containers[0].ports[0].containerPort = '9877'),
      error: /containerPort must be integer/,
    },
    {
      name: 'a scrape interval that is no duration',
      kind: 'ServiceMonitor',
      edit: (m: Json) => (m.spec.endpoints[0].interval = '30 seconds'),
      error: /interval must match pattern/,
    },
    {
      name: 'a rule group without a name',
      kind: 'PrometheusRule',
      edit: (m: Json) => delete m.spec.groups[0].name,
      error: /groups\/0 must have required/,
    },
  ])('the validation rejects $name', ({ kind, edit, error }) => {
    const manifest = structuredClone(byKind(kind));
    edit(manifest);
    expect(() => validate(manifest)).toThrow(error);
  });

  it('runs the container non-root on a read-only root filesystem, the state on a writable volume', () => {
    const pod = byKind('Deployment').spec.template.spec;
    const container = pod.containers[0];
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    const config = parse(byKind('ConfigMap').data['config.yml']) as { state_dir: string };
    const stateMount = container.volumeMounts.find((v: { mountPath: string }) => v.mountPath === config.state_dir);
    expect(stateMount?.readOnly).toBeUndefined();
    expect(pod.volumes.find((v: { name: string }) => v.name === stateMount.name).persistentVolumeClaim.claimName).toBe(
      byKind('PersistentVolumeClaim').metadata.name,
    );
  });

  it('probes /healthz for liveness and /readyz for readiness, sized from the benchmark', () => {
    const container = byKind('Deployment').spec.template.spec.containers[0];
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(Object.keys(container.resources.requests)).toEqual(['cpu', 'memory']);
    expect(Object.keys(container.resources.limits)).toEqual(['memory']); // no CPU limit; memory: test/unit/sizing
  });

  it("gives the daemon a valid config whose api_key_file is in the Secret's mount", () => {
    const deployment = byKind('Deployment');
    const container = deployment.spec.template.spec.containers[0];
    expect(container.args).toEqual([expect.stringMatching(/^--config\.file=\/.+\/config\.yml$/)]);
    const configDir = container.args[0].replace(/^--config\.file=/, '').replace(/\/config\.yml$/, '');
    const mounted = (volume: string) =>
      container.volumeMounts.find((v: { name: string }) => v.name === volume).mountPath;
    expect(mounted('config')).toBe(configDir);
    const raw = parse(byKind('ConfigMap').data['config.yml']) as { upstream: { api_key_file: string } };
    const keyDir = mounted('api-key');
    expect(raw.upstream.api_key_file.startsWith(`${keyDir}/`)).toBe(true);
    const secret = deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'api-key').secret;
    expect(raw.upstream.api_key_file).toBe(`${keyDir}/api-key`);
    expect(secret.secretName).toBe('baremetal-exporter-api-key');
    const read: string[] = [];
    const config = buildConfig(raw, {}, (path) => {
      read.push(path);
      return 'k8s-key';
    });
    expect(read).toEqual([raw.upstream.api_key_file]);
    expect(config.accounts[0]!.upstream.apiKey).toBe('k8s-key');
  });

  it('scrapes the Service port by name, as the job the PrometheusRule selects', () => {
    const service = byKind('Service');
    const pod = byKind('Deployment').spec.template;
    expect(pod.metadata.labels).toMatchObject(service.spec.selector);
    expect(byKind('ServiceMonitor').spec.selector.matchLabels).toEqual(service.spec.selector);
    expect(byKind('ServiceMonitor').spec.endpoints[0].port).toBe(service.spec.ports[0].name);
    expect(kubernetesConfig.selector).toBe(`job="${service.metadata.name}"`);
  });

  it("feeds the blackbox ICMP/TCP and node jobs from the Service's GET /api/v1/discovery, relabeled for the mixin", () => {
    const service = byKind('Service');
    const scrapes = manifests.filter((m) => m.kind === 'ScrapeConfig') as Json[];
    const base = `http://${service.metadata.name}:${service.spec.ports[0].port}/api/v1/discovery`;
    const relabeled = (m: Json) =>
      Object.fromEntries(
        m.spec.relabelings
          .filter((r: Json) => r.sourceLabels?.[0]?.startsWith('__meta_baremetal_'))
          .map((r: Json) => [r.targetLabel, r.sourceLabels[0]]),
      );
    expect(
      scrapes.map((m) => ({
        job: m.spec.jobName,
        url: m.spec.httpSDConfigs[0].url,
        module: m.spec.params?.module,
        labels: relabeled(m),
      })),
    ).toEqual([
      { job: 'blackbox-icmp', url: base, module: ['icmp'], labels: expect.objectContaining(META) },
      { job: 'blackbox-tcp', url: `${base}?port=22`, module: ['tcp_connect'], labels: expect.objectContaining(META) },
      { job: 'node', url: `${base}?port=9100`, module: undefined, labels: expect.objectContaining(META) },
    ]);
    // BaremetalServerUnreachable joins probe_success on instance = the bare IP: the probe's instance is its target.
    const icmp = scrapes[0].spec.relabelings;
    expect(icmp.slice(0, 2)).toEqual([
      { sourceLabels: ['__address__'], targetLabel: '__param_target' },
      { sourceLabels: ['__param_target'], targetLabel: 'instance' },
    ]);
  });
});

const META = {
  server_id: '__meta_baremetal_server_id',
  account: '__meta_baremetal_account',
  location: '__meta_baremetal_location',
};

const kubectl = requireBinary('/usr/bin/kubectl', 'kubernetes-client');
// kubectl is not a CI package: where it exists, its kustomize must build the same objects as the simple render.
it.skipIf(kubectl.skip)('kubectl kustomize builds the same objects', () => {
  const out = execFileSync(kubectl.skip ? '' : kubectl.path, ['kustomize', DIR], { encoding: 'utf8', timeout: 30_000 });
  const built = parseAllDocuments(out).map((d) => d.toJS() as Manifest);
  const key = (m: Manifest) => `${m.kind}/${m.metadata.namespace}/${m.metadata.name}`;
  expect(built.map(key).sort()).toEqual(manifests.map(key).sort());
  for (const m of built) expect(() => validate(m)).not.toThrow();
});

// docs/deploying.md's overlay for two replicas (High availability), built by kubectl where it exists.
it.skipIf(kubectl.skip)(
  "builds docs/deploying.md's two-replica overlay: no claim, the database URL from a Secret",
  () => {
    const docs = readFileSync('docs/deploying.md', 'utf8');
    const overlay = /```yaml\n(# an overlay's kustomization\.yaml[\s\S]*?)```/.exec(docs)?.[1];
    expect(overlay, 'the overlay in docs/deploying.md').toBeDefined();
    const dir = tempDir('bmx-k8s-ha-');
    cpSync(DIR, join(dir, 'kubernetes'), { recursive: true });
    mkdirSync(join(dir, 'kubernetes-ha'));
    writeFileSync(join(dir, 'kubernetes-ha', 'kustomization.yaml'), overlay!);
    const out = execFileSync(kubectl.skip ? '' : kubectl.path, ['kustomize', join(dir, 'kubernetes-ha')], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    const built = parseAllDocuments(out).map((d) => d.toJS() as Json);
    for (const m of built) expect(() => validate(m)).not.toThrow();
    expect(built.map((m) => m.kind)).not.toContain('PersistentVolumeClaim');
    const pod = built.find((m) => m.kind === 'Deployment');
    expect(pod.spec.replicas).toBe(2);
    expect(pod.spec.strategy.type).toBe('RollingUpdate');
    const volumes = pod.spec.template.spec.volumes as Array<{ name: string; [k: string]: unknown }>;
    expect(volumes.find((v) => v.name === 'state')).toEqual({ name: 'state', emptyDir: {} });
    const mount = pod.spec.template.spec.containers[0].volumeMounts.find(
      (v: { name: string }) => v.name === 'database',
    );
    expect(volumes.find((v) => v.name === 'database')).toMatchObject({
      secret: { secretName: /```sh\n.*secret generic (\S+) --from-file=database-url=/.exec(docs)?.[1] },
    });
    // The config line the docs add, with the file the Secret mounts, loads as PostgreSQL.
    const line = /`(database: \{ url_file: (\S+) \})`/.exec(docs);
    expect(line?.[2]).toBe(`${mount.mountPath}/database-url`);
    const raw = { ...(parse(byKind('ConfigMap').data['config.yml']) as object), ...(parse(line![1]!) as object) };
    const config = buildConfig(raw, {}, (path) => (path === line![2] ? 'postgres://u:p@db:5432/baremetal' : 'k8s-key'));
    expect(config.database.kind).toBe('postgres');
  },
);
