/**
 * The exposition cache. Rendering ~100k series with prom-client blocks the event loop for hundreds of
 * milliseconds, so a scrape must not render: it serves the bytes of the last rendering. A rendering
 * happens when a poll job finishes (`renderSoon`) and, when something changed meanwhile (`markDirty`),
 * every `refreshIntervalMs`. So a scrape is as cheap as serving a static buffer.
 */
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { Registry } from 'prom-client';

const gzipAsync = promisify(gzip);
const SEPARATOR = Buffer.from('\n\n');
const NEWLINE = Buffer.from('\n');
const EOF = Buffer.from('# EOF\n');

/** The two exposition formats a scraper can ask for (`Accept`). */
export type ExpositionFormat = 'text' | 'openmetrics';
export const CONTENT_TYPES: Record<ExpositionFormat, string> = {
  text: Registry.PROMETHEUS_CONTENT_TYPE,
  openmetrics: Registry.OPENMETRICS_CONTENT_TYPE,
};

/** One rendering in both formats, each also gzipped once, on first demand. */
export interface Exposition {
  /** the Prometheus text format 0.0.4 */
  body: Buffer;
  contentType: string;
  /** OpenMetrics 1.0.0: counter families named without `_total`, samples with it, `# EOF` at the end */
  openMetrics: Buffer;
  /** Unix time in milliseconds of the rendering */
  renderedAt: number;
  /** the body in `format`, gzipped: compressed once per rendering (off the event loop), then served from memory */
  gzipped(format: ExpositionFormat): Promise<Buffer>;
}

/** What prom-client's renderer reads of a metric (`Registry.getMetricsAsString`, untyped in its .d.ts). */
type Renderer = { getMetricsAsString(metric: { get(): Promise<unknown> }): Promise<string> };
type Collected = { name: string; type: string };

/**
 * Renders both formats with prom-client from one collection of each metric, so they show the same values.
 * prom-client's own OpenMetrics mode renames counters in place (`metric.name` loses `_total`), so the
 * OpenMetrics renderer is given a view of the collected data with the family name instead.
 */
async function renderMetric(metric: object, text: Renderer, om: Renderer): Promise<[string, string]> {
  const source = metric as unknown as { get(): Promise<Collected>; getForPromString?: () => Promise<Collected> };
  const data = await (source.getForPromString ? source.getForPromString() : source.get());
  const family = data.type === 'counter' ? { ...data, name: data.name.replace(/_total$/, '') } : data;
  return [
    await text.getMetricsAsString({ get: async () => data }),
    await om.getMetricsAsString({ get: async () => family }),
  ];
}

export interface ExpositionCacheOptions {
  registry: Registry;
  /** how often a dirty cache is re-rendered, in milliseconds (default 15000) */
  refreshIntervalMs?: number;
  /** called just before rendering, with the time in milliseconds (sets the rendered-at gauge) */
  beforeRender?: (nowMs: number) => void;
  now?: () => number;
}

export class ExpositionCache {
  #current: Exposition | undefined;
  #dirty = true;
  #rendering: Promise<Exposition> | undefined;
  #soon: NodeJS.Timeout | undefined;
  #timer: NodeJS.Timeout | undefined;
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
      const text = new Registry() as unknown as Renderer;
      const om = new Registry() as unknown as Renderer & { setContentType(type: string): void };
      om.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
      // One metric at a time, yielding between them: the event loop is blocked for the largest metric, not
      // for all ~100k series, and each metric's garbage dies young. Same bytes as registry.metrics().
      const parts: Buffer[] = [];
      const omParts: Buffer[] = [];
      for (const metric of registry.getMetricsAsArray()) {
        if (parts.length > 0) parts.push(SEPARATOR);
        const [plain, openMetrics] = await renderMetric(metric, text, om);
        parts.push(Buffer.from(plain));
        omParts.push(Buffer.from(openMetrics), NEWLINE);
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      parts.push(NEWLINE);
      omParts.push(EOF);
      const bodies: Record<ExpositionFormat, Buffer> = {
        text: Buffer.concat(parts),
        openmetrics: Buffer.concat(omParts),
      };
      const compressed = new Map<ExpositionFormat, Promise<Buffer>>();
      this.#current = {
        body: bodies.text,
        contentType: CONTENT_TYPES.text,
        openMetrics: bodies.openmetrics,
        renderedAt: now,
        gzipped: (format) => {
          let zipped = compressed.get(format);
          if (!zipped) {
            zipped = gzipAsync(bodies[format]);
            compressed.set(format, zipped);
          }
          return zipped;
        },
      };
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
}
