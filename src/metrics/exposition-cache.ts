/**
 * The exposition cache. Rendering ~100k series with prom-client blocks the event loop for hundreds of
 * milliseconds, so a scrape must not render: it serves the bytes of the last rendering. A rendering
 * happens when a poll job finishes (`renderSoon`) and, when something changed meanwhile (`markDirty`),
 * every `refreshIntervalMs`. So a scrape is as cheap as serving a static buffer; a scrape asking for gzip gets
 * the newest rendering already compressed (`ExpositionCache.gzipped`). The bytes themselves are written by
 * exposition-format.ts.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Registry } from 'prom-client';
import { Slices } from '../slices.js';
import {
  CONTENT_TYPES,
  CreatedTimes,
  ExpositionBodies,
  renderMetric,
  type ExpositionFormat,
  type RenderedMetric,
} from './exposition-format.js';
import { StateFamily, sameVersion } from './state-family.js';

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

/** A rendering of `bodies` made at `renderedAt` (Unix milliseconds); each body joined or gzipped at its first use. */
function exposition(bodies: Record<ExpositionFormat, readonly Buffer[]>, renderedAt: number): Exposition {
  const lengths: Record<ExpositionFormat, number> = {
    text: bodies.text.reduce((sum, part) => sum + part.length, 0),
    openmetrics: bodies.openmetrics.reduce((sum, part) => sum + part.length, 0),
  };
  const joined = new Map<ExpositionFormat, Buffer>();
  const compressed = new Map<ExpositionFormat, Promise<Buffer>>();
  return {
    contentType: CONTENT_TYPES.text,
    renderedAt,
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
  /**
   * metrics (by name) whose series are included only for the accounts `led()` returns, asked at each rendering
   * (undefined: every account); a series without the label `account` is always included
   */
  accountSeries?: { names: ReadonlySet<string>; led: () => ReadonlySet<string> | undefined };
}

export class ExpositionCache {
  #current: Exposition | undefined;
  /** which rendering #current is: 1 for the first, counting up */
  #currentSeq = 0;
  /** the formats a scraper has asked for gzipped: each new rendering is compressed in them at once */
  readonly #gzipFormats = new Set<ExpositionFormat>();
  /** per format, the newest rendering whose gzipped body is ready: its number and that body */
  readonly #gzipped = new Map<ExpositionFormat, { seq: number; led: string; body: Buffer }>();
  #dirty = true;
  /**
   * the accounts whose series #current includes (`accountSeries.led()` when it was rendered, as a key): set with
   * #current when a rendering completes, never at its start, so that a scrape during a rendering compares
   * against what it would be served
   */
  #currentLed: string | undefined;
  #rendering: Promise<Exposition> | undefined;
  #soon: NodeJS.Timeout | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** formatted label sets by prom-client's label object (see labelText in exposition-format.ts) */
  readonly #labels = new WeakMap<object, string>();
  readonly #created = new CreatedTimes();
  /** the last rendering of each family rendered from state, with what it read then (FamilySource.version) */
  readonly #families = new WeakMap<object, { version: unknown[]; led: string; rendered: RenderedMetric }>();
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
      const { bodies, ledKey } = await this.#renderBodies(now);
      const seq = this.#currentSeq + 1;
      this.#current = exposition(bodies, now);
      this.#currentSeq = seq;
      this.#currentLed = ledKey;
      for (const format of this.#gzipFormats)
        void this.#compress(this.#current, seq, ledKey, format).catch(() => undefined);
      return this.#current;
    })().finally(() => {
      this.#rendering = undefined;
    });
    return this.#rendering;
  }

  /**
   * The bodies of a rendering at `now` (Unix milliseconds): every included metric of the registry, in slices of
   * SLICE_MS with a yield between them (also inside a metric of many series), so a scrape or a poll reply waits
   * for one slice at most. Same bytes as registry.metrics().
   */
  async #renderBodies(now: number): Promise<{ bodies: Record<ExpositionFormat, readonly Buffer[]>; ledKey: string }> {
    const { registry, include, created, accountSeries } = this.#options;
    const slices = new Slices();
    const bodies = new ExpositionBodies();
    this.#created.now = now / 1000;
    const led = accountSeries?.led();
    /** the accounts whose series are included, as a cache key ('' for all) */
    const ledKey = ledKeyOf(led);
    for (const metric of registry.getMetricsAsArray()) {
      if (include && !include(metric.name)) continue;
      const withCreated = created?.has(metric.name) ? this.#created : undefined;
      const filtered = led !== undefined && accountSeries!.names.has(metric.name);
      // A family whose state is unchanged since its last rendering (for the same accounts) is not collected
      // again: its bytes are reused. prom-client's own metrics (process-local, a few hundred series) are.
      const keep = filtered ? (account: string) => led.has(account) : undefined;
      const family: object = metric;
      const version = family instanceof StateFamily ? family.source?.version(keep) : undefined;
      const cached = this.#families.get(metric);
      const key = filtered ? ledKey : '';
      let rendered: RenderedMetric;
      if (version !== undefined && cached?.led === key && sameVersion(cached.version, version))
        rendered = cached.rendered;
      else {
        rendered = await renderMetric(metric, this.#labels, slices, withCreated, keep);
        if (version !== undefined) this.#families.set(metric, { version, led: key, rendered });
      }
      bodies.add(rendered);
      await slices.next();
    }
    return { bodies: bodies.finish(), ledKey };
  }

  /**
   * The last rendering; renders once if there is none yet, or when the accounts this replica leads are no
   * longer those it was rendered for (a process woken from a freeze past its leases answers what it leads now,
   * not what it led before: issue 50). A rendering in progress is awaited, and the accounts checked again once it
   * completes: it may have started before they changed.
   */
  async get(): Promise<Exposition> {
    // Bounded: accounts that change at every rendering get the latest one rendered after the third change.
    for (let tries = 0; tries < 3; tries++) {
      if (this.#current && !this.#ledChanged()) return this.#current;
      await this.render();
    }
    return this.#current ?? this.render();
  }

  /** True when `accountSeries.led()` is no longer what the current rendering was made for. */
  #ledChanged(): boolean {
    return this.#ledKey() !== this.#currentLed;
  }

  /** The accounts a rendering made now would include, as a key ('' for all). */
  #ledKey(): string {
    return ledKeyOf(this.#options.accountSeries?.led());
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
    if (held && held.led === this.#ledKey()) return held.body;
    const current = await this.get();
    this.#gzipFormats.add(format);
    return this.#compress(current, this.#currentSeq, this.#currentLed ?? '', format);
  }

  /**
   * Compresses rendering number `seq` (of the accounts `led`, as a key) in `format` (once: Exposition.gzipped
   * keeps it) and holds it if newest.
   */
  async #compress(exposition: Exposition, seq: number, led: string, format: ExpositionFormat): Promise<Buffer> {
    const body = await exposition.gzipped(format);
    if ((this.#gzipped.get(format)?.seq ?? 0) < seq) this.#gzipped.set(format, { seq, led, body });
    return body;
  }
}

/** The accounts whose series are included, as a cache key ('' for all). */
function ledKeyOf(led: ReadonlySet<string> | undefined): string {
  return led ? `:${[...led].sort().join(',')}` : '';
}
