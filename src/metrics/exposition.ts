/**
 * The exposition cache. Rendering ~100k series with prom-client blocks the event loop for hundreds of
 * milliseconds, so a scrape must not render: it serves the bytes of the last rendering. A rendering
 * happens when a poll job finishes (`renderSoon`) and, when something changed meanwhile (`markDirty`),
 * every `refreshIntervalMs`. So a scrape is as cheap as serving a static buffer.
 */
import type { Registry } from 'prom-client';

const SEPARATOR = Buffer.from('\n\n');
const NEWLINE = Buffer.from('\n');

export interface Exposition {
  body: Buffer;
  contentType: string;
  /** Unix time in milliseconds of the rendering */
  renderedAt: number;
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
      // One metric at a time, yielding between them: the event loop is blocked for the largest metric, not
      // for all ~100k series, and each metric's garbage dies young. Same bytes as registry.metrics().
      const parts: Buffer[] = [];
      for (const metric of registry.getMetricsAsArray()) {
        if (parts.length > 0) parts.push(SEPARATOR);
        parts.push(Buffer.from(await registry.getSingleMetricAsString(metric.name)));
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      parts.push(NEWLINE);
      this.#current = { body: Buffer.concat(parts), contentType: registry.contentType, renderedAt: now };
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
