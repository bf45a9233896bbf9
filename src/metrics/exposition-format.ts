/**
 * The serializer of the exposition: metrics → the bytes of the Prometheus text format 0.0.4 and of OpenMetrics
 * 1.0.0, byte for byte what prom-client's `getMetricsAsString` writes (a unit test compares them). No timers and
 * no cache policy: when to render, and what to keep of a rendering, is exposition-cache.ts's job. Long
 * metrics are cut into slices (slices.ts) so a rendering never holds the event loop for long.
 */
import { Registry } from 'prom-client';
import { CLOCK_EVERY, type Slices } from '../slices.js';
import { type KeepAccount, StateFamily } from './state-family.js';

const SEPARATOR = Buffer.from('\n\n');
const NEWLINE = Buffer.from('\n');
const EOF = Buffer.from('# EOF\n');

/** The two exposition formats a scraper can ask for (`Accept`). */
export type ExpositionFormat = 'text' | 'openmetrics';
export const CONTENT_TYPES: Record<ExpositionFormat, string> = {
  text: Registry.PROMETHEUS_CONTENT_TYPE,
  openmetrics: Registry.OPENMETRICS_CONTENT_TYPE,
};

/** What prom-client's renderer reads of a metric (`Registry.getMetricsAsString`, untyped in its .d.ts). */
type Renderer = { getMetricsAsString(metric: { get(): Promise<unknown> }): Promise<string> };
/** One sample of a collected metric, as prom-client's `get()`/`getForPromString()` return it. */
interface Sample {
  labels?: Record<string, unknown>;
  /** a histogram's series labels, shared by its buckets */
  sharedLabels?: Record<string, unknown>;
  value: number;
  metricName?: string;
  exemplar?: unknown;
}
type Collected = { name: string; help: string; type: string; values?: Sample[] };

const escapeString = (text: string): string =>
  text.includes('\\') || text.includes('\n') ? text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : text;
const NEEDS_ESCAPE = /[\\\n"]/;
/** A label value as prom-client escapes a string; most values need no escaping and skip the replaces. */
function escapeText(value: string): string {
  return NEEDS_ESCAPE.test(value) ? escapeString(value).replace(/"/g, '\\"') : value;
}
/** prom-client's `escapeLabelValue`: non-strings as they are, strings by escapeText. */
function escapeLabelValue(value: unknown): unknown {
  return typeof value === 'string' ? escapeText(value) : value;
}
function formatLabels(labels: Record<string, unknown>, exclude?: Record<string, unknown>): string[] {
  const formatted: string[] = [];
  for (const name of Object.keys(labels))
    if (!exclude || !Object.hasOwn(exclude, name)) formatted.push(`${name}="${escapeLabelValue(labels[name])}"`);
  return formatted;
}
/** prom-client's `getValueAsString`. */
function valueText(value: number): string {
  if (Number.isNaN(value)) return 'Nan';
  if (!Number.isFinite(value)) return value < 0 ? '-Inf' : '+Inf';
  return `${value}`;
}

/**
 * The `{…}` of a sample, as prom-client writes it. Cached by label object: prom-client keeps one object per
 * series (a counter for its life, a gauge until its next `set`), so an unchanged series is formatted once,
 * not at every rendering. A histogram's bucket labels are new objects each time; its shared part is cached.
 */
function labelText(sample: Sample, cache: WeakMap<object, string>): string {
  const labels = sample.labels ?? {};
  const shared = sample.sharedLabels;
  if (shared === undefined || Object.keys(shared).length === 0) {
    let text = cache.get(labels);
    if (text === undefined) {
      const parts = formatLabels(labels);
      // Joined, not concatenated: a flat string. `{${…}}` would keep a rope of three strings per series.
      text = parts.length > 0 ? ['{', parts.join(','), '}'].join('') : '';
      cache.set(labels, text);
    }
    return text;
  }
  let flat = cache.get(shared);
  if (flat === undefined) {
    flat = formatLabels(shared).join(',');
    cache.set(shared, flat);
  }
  const parts = [...formatLabels(labels, shared), flat].filter(Boolean);
  return parts.length > 0 ? `{${parts.join(',')}}` : '';
}

/** Sample text kept as a string at most this long before it is encoded: no multi-MB strings per rendering. */
const CHUNK_CHARS = 64 * 1024;

/** One metric in both formats: its header in each, then sample lines as encoded chunks. */
export interface RenderedMetric {
  text: Buffer[];
  openMetrics: Buffer[];
}

/**
 * Renders one metric in both formats, byte for byte what prom-client's `getMetricsAsString` writes for each
 * (a unit test compares them), from one collection so both show the same values, and in slices of
 * SLICE_MS. OpenMetrics names a counter family without `_total` and its samples with it; every other
 * sample line is the same in both formats, so it is built and encoded once, in chunks of CHUNK_CHARS that
 * both bodies share. A metric with exemplars goes through prom-client itself.
 */
async function renderCollected(
  metric: object,
  cache: WeakMap<object, string>,
  slices: Slices,
  created?: CreatedTimes,
  keep?: KeepAccount,
): Promise<RenderedMetric> {
  const source = metric as unknown as { get(): Promise<Collected>; getForPromString?: () => Promise<Collected> };
  const collected = await (source.getForPromString ? source.getForPromString() : source.get());
  const data = keep
    ? { ...collected, values: collected.values?.filter((sample) => keepSample(sample, keep)) }
    : collected;
  const counter = data.type === 'counter';
  const family = counter ? { ...data, name: data.name.replace(/_total$/, '') } : data;
  const values = data.values ?? [];
  if (values.some((sample) => sample.exemplar)) {
    const text = new Registry() as unknown as Renderer;
    const om = new Registry() as unknown as Renderer & { setContentType(type: string): void };
    om.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    return {
      text: [Buffer.from(await text.getMetricsAsString({ get: async () => data }))],
      openMetrics: [Buffer.from(await om.getMetricsAsString({ get: async () => family }))],
    };
  }
  const name = escapeString(data.name);
  const familyName = escapeString(family.name);
  const help = escapeString(data.help);
  const line = (sample: Sample, sampleName: string) =>
    `\n${sampleName}${labelText(sample, cache)} ${valueText(sample.value)}`;
  /** the OpenMetrics name of a sample; the same as the text one but for a counter not named `…_total` */
  const omName = (sample: Sample) =>
    counter ? `${sample.metricName ?? familyName}_total` : (sample.metricName ?? name);
  const chunks: Buffer[] = [];
  let pending = '';
  let apart = false;
  for (let i = 0; i < values.length; i++) {
    const sample = values[i]!;
    const textName = sample.metricName ?? name;
    pending += line(sample, textName);
    if (omName(sample) !== textName) apart = true;
    if (pending.length >= CHUNK_CHARS) {
      chunks.push(Buffer.from(pending));
      pending = '';
    }
    if (i % CLOCK_EVERY === CLOCK_EVERY - 1) await slices.next();
  }
  if (pending) chunks.push(Buffer.from(pending));
  const text = [Buffer.from(`# HELP ${name} ${help}\n# TYPE ${name} ${data.type}`), ...chunks];
  const omHead = Buffer.from(`# HELP ${familyName} ${help}\n# TYPE ${familyName} ${data.type}`);
  if (counter && created) {
    // Each `_total` sample followed by its `_created` (OpenMetrics: the samples of one label set together).
    const omLines: string[] = [];
    for (const sample of values) {
      omLines.push(line(sample, omName(sample)));
      omLines.push(`\n${familyName}_created${labelText(sample, cache)} ${created.of(sample.labels ?? {})}`);
    }
    return { text, openMetrics: [omHead, Buffer.from(omLines.join(''))] };
  }
  if (!apart) return { text, openMetrics: [omHead, ...chunks] };
  // Rare (no such metric here): the OpenMetrics lines apart.
  return { text, openMetrics: [omHead, Buffer.from(values.map((sample) => line(sample, omName(sample))).join(''))] };
}

function keepSample(sample: Sample, keep: KeepAccount): boolean {
  const account = sample.labels?.account ?? sample.sharedLabels?.account;
  return account === undefined || keep(String(account));
}

/**
 * Renders a StateFamily from its source's samples, the same bytes as renderCollected (and so as prom-client)
 * would write from its `get()`, without label objects: each label text is formatted as it is emitted. A counter's
 * OpenMetrics samples are each followed by their `_created` (the time the state gives, else this rendering's).
 */
async function renderStateFamily(
  family: StateFamily,
  slices: Slices,
  created?: CreatedTimes,
  keep?: KeepAccount,
): Promise<RenderedMetric> {
  const counter = family.type === 'counter';
  const name = escapeString(family.name);
  const familyName = counter ? escapeString(family.name.replace(/_total$/, '')) : name;
  const help = escapeString(family.help);
  const omSample = counter ? `${familyName}_total` : name;
  const text: Buffer[] = [Buffer.from(`# HELP ${name} ${help}\n# TYPE ${name} ${family.type}`)];
  const openMetrics: Buffer[] = [Buffer.from(`# HELP ${familyName} ${help}\n# TYPE ${familyName} ${family.type}`)];
  const apart = omSample !== name || created !== undefined;
  // What goes before each label value: `{name="`, then `",name="`; `"}` after the last.
  const before = family.labelNames.map((label, i) => `${i === 0 ? '{' : '",'}${label}="`);
  const after = before.length > 0 ? '"}' : '';
  let pending = '';
  let omPending = '';
  const emit = (values: readonly string[], value: number, createdSeconds?: number) => {
    let labels = '';
    for (let i = 0; i < before.length; i++) labels += before[i]! + escapeText(values[i]!);
    labels += after;
    const sample = valueText(value);
    pending += `\n${name}${labels} ${sample}`;
    if (apart) {
      omPending += `\n${omSample}${labels} ${sample}`;
      if (created) omPending += `\n${familyName}_created${labels} ${createdSeconds ?? created.now}`;
    }
  };
  const flush = (last: boolean) => {
    if (pending.length >= CHUNK_CHARS || (last && pending)) {
      text.push(Buffer.from(pending));
      if (!apart) openMetrics.push(text.at(-1)!);
      pending = '';
    }
    if (omPending.length >= CHUNK_CHARS || (last && omPending)) {
      openMetrics.push(Buffer.from(omPending));
      omPending = '';
    }
  };
  // The source yields every few hundred samples' items: a chunk may be due, and a turn of the loop.
  for (const _ of family.source?.collect(emit, keep) ?? []) {
    flush(false);
    await slices.next();
  }
  flush(true);
  return { text, openMetrics };
}

/**
 * When each series of a prom-client counter was created, for OpenMetrics `_created`: the time of the first
 * rendering that saw it, in Unix seconds. prom-client keeps one label object per counter series for its life (a
 * removed series that comes back is a new object, so a new time). A StateFamily's counter gives its own (the
 * state knows when each series began); `now` is its fallback.
 */
export class CreatedTimes {
  readonly #times = new WeakMap<object, number>();
  /** Unix seconds of the rendering in progress */
  now = 0;
  of(labels: object): number {
    let at = this.#times.get(labels);
    if (at === undefined) {
      at = this.now;
      this.#times.set(labels, at);
    }
    return at;
  }
}

/**
 * Renders one metric in both formats: a StateFamily from its source, any other prom-client metric from
 * one collection. `labels` keeps formatted label sets by prom-client's label object across renderings (see
 * labelText); `created`, when given, adds OpenMetrics `_created` lines to a counter's samples.
 */
export function renderMetric(
  metric: object,
  labels: WeakMap<object, string>,
  slices: Slices,
  created?: CreatedTimes,
  keep?: KeepAccount,
): Promise<RenderedMetric> {
  return metric instanceof StateFamily
    ? renderStateFamily(metric, slices, created, keep)
    : renderCollected(metric, labels, slices, created, keep);
}

/**
 * The bodies of one rendering, built metric by metric in registry order: in the text format the metrics apart
 * by a blank line and a newline at the end; in OpenMetrics each metric ended by a newline and the body by
 * `# EOF`.
 */
export class ExpositionBodies {
  readonly #text: Buffer[] = [];
  readonly #openMetrics: Buffer[] = [];

  add(rendered: RenderedMetric): void {
    if (this.#text.length > 0) this.#text.push(SEPARATOR);
    this.#text.push(...rendered.text);
    this.#openMetrics.push(...rendered.openMetrics, NEWLINE);
  }

  /** Ends both bodies; returns their chunks by format. Call once. */
  finish(): Record<ExpositionFormat, readonly Buffer[]> {
    this.#text.push(NEWLINE);
    this.#openMetrics.push(EOF);
    return { text: this.#text, openmetrics: this.#openMetrics };
  }
}
