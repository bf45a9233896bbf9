/**
 * The exposition cache. Rendering ~100k series with prom-client blocks the event loop for hundreds of
 * milliseconds, so a scrape must not render: it serves the bytes of the last rendering. A rendering
 * happens when a poll job finishes (`renderSoon`) and, when something changed meanwhile (`markDirty`),
 * every `refreshIntervalMs`. So a scrape is as cheap as serving a static buffer; a scrape asking for gzip gets
 * the newest rendering already compressed (`ExpositionCache.gzipped`).
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { Registry } from 'prom-client';
import { CLOCK_EVERY, Slices } from '../slices.js';
import { changeVersion } from './changes.js';
import { SeriesFamily } from './series.js';

const SEPARATOR = Buffer.from('\n\n');
const NEWLINE = Buffer.from('\n');
const EOF = Buffer.from('# EOF\n');

/** The two exposition formats a scraper can ask for (`Accept`). */
export type ExpositionFormat = 'text' | 'openmetrics';
export const CONTENT_TYPES: Record<ExpositionFormat, string> = {
  text: Registry.PROMETHEUS_CONTENT_TYPE,
  openmetrics: Registry.OPENMETRICS_CONTENT_TYPE,
};

/**
 * One rendering in both formats. Each body is joined into one Buffer only when a scraper asks for it
 * uncompressed: Prometheus asks for gzip, which is compressed from the rendering's chunks (the Buffers the cache
 * keeps for each unchanged metric anyway), so at 10,000 servers the two ~12 MB joined copies are not held
 * (issue 22). A joined body is served as one Buffer, which the socket writes without a turn of the event loop
 * per chunk.
 */
export interface Exposition {
  /** the Prometheus text format 0.0.4's content type */
  contentType: string;
  /** Unix time in milliseconds of the rendering */
  renderedAt: number;
  /** the body's length in bytes */
  byteLength(format: ExpositionFormat): number;
  /**
   * The body in `format`: text format 0.0.4, or OpenMetrics 1.0.0 (counter families named without `_total`,
   * samples with it, `# EOF` at the end); joined at the first call for that format, then the same Buffer.
   */
  bytes(format: ExpositionFormat): Buffer;
  /** the body in `format`, gzipped: compressed once per rendering (off the event loop), then served from memory */
  gzipped(format: ExpositionFormat): Promise<Buffer>;
}

/** gzip of `chunks`, on libuv's pool, without joining them first. */
async function gzipChunks(chunks: readonly Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  await pipeline(Readable.from(chunks), createGzip(), async (zipped: AsyncIterable<Buffer>) => {
    for await (const chunk of zipped) out.push(chunk);
  });
  return Buffer.concat(out);
}

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
/** prom-client's `escapeLabelValue`: non-strings as they are; most values need no escaping and skip the replaces. */
function escapeLabelValue(value: unknown): unknown {
  if (typeof value !== 'string' || !NEEDS_ESCAPE.test(value)) return value;
  return escapeString(value).replace(/"/g, '\\"');
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
interface RenderedMetric {
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
async function renderMetric(
  metric: object,
  cache: WeakMap<object, string>,
  slices: Slices,
  created?: CreatedTimes,
): Promise<RenderedMetric> {
  const source = metric as unknown as { get(): Promise<Collected>; getForPromString?: () => Promise<Collected> };
  const data = await (source.getForPromString ? source.getForPromString() : source.get());
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

/**
 * Renders a SeriesFamily straight from its series' label texts, the same bytes as renderMetric (and so as
 * prom-client) would write from its `get()`: no collection, no label objects, no formatting per rendering.
 */
async function renderFamily(family: SeriesFamily, slices: Slices, created?: CreatedTimes): Promise<RenderedMetric> {
  const counter = family.type === 'counter';
  const name = escapeString(family.name);
  const familyName = counter ? escapeString(family.name.replace(/_total$/, '')) : name;
  const help = escapeString(family.help);
  const omSample = counter ? `${familyName}_total` : name;
  const text: Buffer[] = [Buffer.from(`# HELP ${name} ${help}\n# TYPE ${name} ${family.type}`)];
  const openMetrics: Buffer[] = [Buffer.from(`# HELP ${familyName} ${help}\n# TYPE ${familyName} ${family.type}`)];
  const apart = omSample !== name || created !== undefined;
  let pending = '';
  let omPending = '';
  let i = 0;
  for (const series of family.series()) {
    const value = valueText(series.value);
    pending += `\n${name}${series.text} ${value}`;
    if (apart) {
      omPending += `\n${omSample}${series.text} ${value}`;
      if (created) omPending += `\n${familyName}_created${series.text} ${created.of(series)}`;
    }
    if (pending.length >= CHUNK_CHARS) {
      text.push(Buffer.from(pending));
      if (!apart) openMetrics.push(text.at(-1)!);
      pending = '';
    }
    if (omPending.length >= CHUNK_CHARS) {
      openMetrics.push(Buffer.from(omPending));
      omPending = '';
    }
    if (++i % CLOCK_EVERY === 0) await slices.next();
  }
  if (pending) {
    text.push(Buffer.from(pending));
    if (!apart) openMetrics.push(text.at(-1)!);
  }
  if (omPending) openMetrics.push(Buffer.from(omPending));
  return { text, openMetrics };
}

/**
 * When each series of a counter was created, for OpenMetrics `_created`: the time of the first rendering
 * that saw it, in Unix seconds. prom-client keeps one label object per counter series for its life (a
 * removed series that comes back is a new object, so a new time); a series is rendered right after the
 * poll that created it, so the time is the poll's end, not the counter's first event (counted later).
 */
class CreatedTimes {
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

export interface ExpositionCacheOptions {
  registry: Registry;
  /** how often a dirty cache is re-rendered, in milliseconds (default 15000) */
  refreshIntervalMs?: number;
  /** called just before rendering, with the time in milliseconds (sets the rendered-at gauge) */
  beforeRender?: (nowMs: number) => void;
  now?: () => number;
  /** which metrics (by name) a rendering includes, asked at each rendering (default: all) */
  include?: (name: string) => boolean;
  /** counters (by name) whose OpenMetrics samples get a `_created` line (default: none) */
  created?: ReadonlySet<string>;
}

export class ExpositionCache {
  #current: Exposition | undefined;
  /** which rendering #current is: 1 for the first, counting up */
  #currentSeq = 0;
  /** the formats a scraper has asked for gzipped: each new rendering is compressed in them at once */
  readonly #gzipFormats = new Set<ExpositionFormat>();
  /** per format, the newest rendering whose gzipped body is ready: its number and that body */
  readonly #gzipped = new Map<ExpositionFormat, { seq: number; body: Buffer }>();
  #dirty = true;
  #rendering: Promise<Exposition> | undefined;
  #soon: NodeJS.Timeout | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** formatted label sets by prom-client's label object (see labelText) */
  readonly #labels = new WeakMap<object, string>();
  readonly #created = new CreatedTimes();
  /** the last rendering of each metric that counts its changes (metrics/changes.ts), with the count then */
  readonly #families = new WeakMap<object, { version: number; rendered: RenderedMetric }>();
  readonly #options: ExpositionCacheOptions;

  constructor(options: ExpositionCacheOptions) {
    this.#options = options;
  }

  /** Starts the periodic refresh (unref'd: it never keeps the process alive). */
  start(): void {
    this.#timer ??= setInterval(() => {
      if (this.#dirty) void this.render();
    }, this.#options.refreshIntervalMs ?? 15_000).unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    clearTimeout(this.#soon);
    this.#soon = undefined;
  }

  /** Something changed; the next periodic refresh renders. Cheap: call it on every API request. */
  markDirty(): void {
    this.#dirty = true;
  }

  /** Render within `delayMs` (default: the next turn of the event loop), coalescing the calls meanwhile. */
  renderSoon(delayMs = 0): void {
    this.#dirty = true;
    this.#soon ??= setTimeout(() => {
      this.#soon = undefined;
      void this.render();
    }, delayMs).unref();
  }

  /** Renders now (one rendering at a time) and returns the new exposition. */
  async render(): Promise<Exposition> {
    if (this.#rendering) return this.#rendering;
    this.#rendering = (async () => {
      this.#dirty = false;
      const now = (this.#options.now ?? Date.now)();
      this.#options.beforeRender?.(now);
      const { registry } = this.#options;
      // In slices of SLICE_MS with a yield between them (also inside a metric of many series), so a
      // scrape or a poll reply waits for one slice at most. Same bytes as registry.metrics().
      const slices = new Slices();
      const parts: Buffer[] = [];
      const omParts: Buffer[] = [];
      const { include, created } = this.#options;
      this.#created.now = now / 1000;
      for (const metric of registry.getMetricsAsArray()) {
        if (include && !include(metric.name)) continue;
        if (parts.length > 0) parts.push(SEPARATOR);
        const withCreated = created?.has(metric.name) ? this.#created : undefined;
        // A metric unchanged since its last rendering is not collected again: its bytes are reused.
        const version = changeVersion(metric);
        const cached = this.#families.get(metric);
        let rendered: RenderedMetric;
        if (version !== undefined && cached?.version === version) rendered = cached.rendered;
        else {
          rendered =
            metric instanceof SeriesFamily
              ? await renderFamily(metric, slices, withCreated)
              : await renderMetric(metric, this.#labels, slices, withCreated);
          if (version !== undefined) this.#families.set(metric, { version, rendered });
        }
        parts.push(...rendered.text);
        omParts.push(...rendered.openMetrics, NEWLINE);
        await slices.next();
      }
      parts.push(NEWLINE);
      omParts.push(EOF);
      const bodies: Record<ExpositionFormat, readonly Buffer[]> = { text: parts, openmetrics: omParts };
      const lengths: Record<ExpositionFormat, number> = {
        text: parts.reduce((sum, part) => sum + part.length, 0),
        openmetrics: omParts.reduce((sum, part) => sum + part.length, 0),
      };
      const joined = new Map<ExpositionFormat, Buffer>();
      const compressed = new Map<ExpositionFormat, Promise<Buffer>>();
      const seq = this.#currentSeq + 1;
      this.#current = {
        contentType: CONTENT_TYPES.text,
        renderedAt: now,
        byteLength: (format) => lengths[format],
        bytes: (format) => {
          let body = joined.get(format);
          if (!body) {
            body = Buffer.concat(bodies[format], lengths[format]);
            joined.set(format, body);
          }
          return body;
        },
        gzipped: (format) => {
          let zipped = compressed.get(format);
          if (!zipped) {
            zipped = gzipChunks(bodies[format]);
            compressed.set(format, zipped);
          }
          return zipped;
        },
      };
      this.#currentSeq = seq;
      for (const format of this.#gzipFormats) void this.#compress(this.#current, seq, format).catch(() => undefined);
      return this.#current;
    })().finally(() => {
      this.#rendering = undefined;
    });
    return this.#rendering;
  }

  /** The last rendering; renders once if there is none yet. */
  async get(): Promise<Exposition> {
    return this.#current ?? this.render();
  }

  /**
   * The body in `format`, gzipped, for a scrape: the newest rendering whose compression has finished. A new
   * rendering is compressed as soon as it is made, in every format a scraper has asked for (~0.1–0.2 s of a
   * libuv thread for the ~12 MB at 10,000 servers); a scrape meanwhile gets the rendering before it, so that
   * it never waits for that (issue 22: `/metrics` p99 during a poll cycle). Only the first gzip scrape of a
   * format waits for its compression (every later rendering's was started by `render`, as the format was
   * known by then). Rejects when that compression fails.
   */
  async gzipped(format: ExpositionFormat): Promise<Buffer> {
    const held = this.#gzipped.get(format);
    if (held) return held.body;
    const current = this.#current ?? (await this.render());
    this.#gzipFormats.add(format);
    return this.#compress(current, this.#currentSeq, format);
  }

  /** Compresses rendering number `seq` in `format` (once: Exposition.gzipped keeps it) and holds it if newest. */
  async #compress(exposition: Exposition, seq: number, format: ExpositionFormat): Promise<Buffer> {
    const body = await exposition.gzipped(format);
    if ((this.#gzipped.get(format)?.seq ?? 0) < seq) this.#gzipped.set(format, { seq, body });
    return body;
  }
}
