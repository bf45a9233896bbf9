/**
 * One account's latest graph image per (server, type, scale), on disk under
 * `<state_dir>/graphs/<account>/dedicated/<server_id>/<type>-<scale>.png` (so a restart serves them at once),
 * read from there when `/graphs` serves one. Memory holds what the list and HTTP caching need, not the bytes:
 * at 10,000 servers the images of the default graphs are ~200 MB, and a dashboard asks for a few of them
 * (issue 22). A server id that cannot be a directory name (see SAFE_ID) has its images kept in memory.
 * The layout before accounts (`<state_dir>/graphs/dedicated/…`) is moved into the `default` account's place
 * on the first load.
 */
import { createHash } from 'node:crypto';
import { access, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { GRAPH_SCALES, GRAPH_TYPES, type GraphScale, type GraphType } from '../config/api-terms.js';
import { BoundedFileError, readBoundedFile, readProblem } from '../read-bounded-file.js';
import { pngSize } from './png.js';
import { byCodeUnits } from '../order.js';

/** What a graph store copies its changes to (the leader's, with PostgreSQL). */
export interface GraphMirror {
  /** throws when the image could not be written (that graph's poll fails) */
  put(graph: StoredGraph): Promise<void>;
  /** drops every image of a server that is gone; a failure is logged, never thrown (the server poll goes on) */
  removeServer(serverId: string): Promise<void>;
  /** drops every image of a server not in `serverIds` */
  retainServers(serverIds: ReadonlySet<string>): Promise<void>;
}

/** Identifies one graph of one server. */
export interface GraphKey {
  serverId: string;
  type: GraphType;
  scale: GraphScale;
}

/** What is known of a held image without reading it: what the list and HTTP caching need. */
export interface HeldGraph extends GraphKey {
  /** strong ETag, quoted */
  etag: string;
  /** Unix time in milliseconds the image was fetched */
  updatedAt: number;
  width: number;
  height: number;
  /** size of the PNG, bytes */
  bytes: number;
}

/** A held image with its bytes. */
export interface StoredGraph extends HeldGraph {
  png: Buffer;
}

/** The index entry of an image: its bytes only when it has no file (an id that is no directory name). */
type Entry = HeldGraph & { png?: Buffer };

/** Server ids become directory names: only these characters are accepted. */
const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;
const FILE = /^(port_[a-z]+)-(day|week|month)\.png$/;

const keyOf = (k: GraphKey) => `${k.serverId}/${k.type}/${k.scale}`;
const etagOf = (png: Buffer) => `"${createHash('sha1').update(png).digest('base64url')}"`;

export class GraphStore {
  readonly #graphs = new Map<string, Entry>();
  /** the entries `put` by this process (not loaded from disk): those have a last-success series */
  readonly #fetched = new WeakSet<Entry>();
  /** changes of the images held (put, dropped, loaded): a rendering reuses the graph series' bytes while it stays */
  #changes = 0;
  /**
   * The puts in flight (writing their file, then copying to the mirror), each with its server id and its
   * writes (never rejected): a removal while one is in flight marks it dropped (it then holds nothing) and
   * waits for its writes (file and mirror) before deleting.
   */
  readonly #writing = new Set<{ serverId: string; dropped: boolean; written: Promise<unknown> }>();
  readonly #dir: string;
  /** the directory of the layout before accounts, adopted by `load()` when set */
  readonly #legacyDir: string | undefined;
  /** where the changes are copied to (the shared database), if anywhere */
  readonly #mirror: GraphMirror | undefined;
  /** where a file that is not a regular file is reported */
  readonly #logger: Pick<Logger, 'warn'> | undefined;

  /**
   * `stateDir`: the daemon's state directory; images go below `graphs/<account>/dedicated`. `legacyGraphs`:
   * adopt `graphs/dedicated` (the layout before accounts) — for the `default` account, when no account is
   * named `dedicated` (whose own directory that would be). `mirror`: every image put and every removal is
   * also written there (replicas sharing PostgreSQL); a write that fails fails the `put` or removal.
   * `logger`: where an image file that is not a regular file (a FIFO, a device) is reported when skipped.
   */
  constructor(
    stateDir: string,
    account: string,
    options: { legacyGraphs?: boolean; mirror?: GraphMirror; logger?: Pick<Logger, 'warn'> } = {},
  ) {
    this.#dir = join(stateDir, 'graphs', account, 'dedicated');
    this.#legacyDir = options.legacyGraphs ? join(stateDir, 'graphs', 'dedicated') : undefined;
    this.#mirror = options.mirror;
    this.#logger = options.logger;
  }

  /**
   * The bytes of an image file: a regular file only, read without blocking (readBoundedFile). A FIFO or a
   * device put in its place is refused before it is opened, with a log line, so it never holds a pool
   * thread (issue 28); undefined when the file cannot be read.
   */
  async #read(file: string): Promise<Buffer | undefined> {
    try {
      return await readBoundedFile(file, 'graph', { regularOnly: true });
    } catch (error) {
      if (error instanceof BoundedFileError)
        this.#logger?.warn({ file, problem: readProblem(error) }, 'graph image file skipped');
      return undefined;
    }
  }

  get size(): number {
    return this.#graphs.size;
  }

  /** Counts every change of the images held (a new one, a new fetch of one, one dropped). */
  get changes(): number {
    return this.#changes;
  }

  /**
   * The images this process fetched and still holds, in the order they were first held, without copying
   * (`baremetal_graph_last_success_timestamp_seconds`, collectors/families.ts). Do not keep them.
   */
  *fetched(): Iterable<HeldGraph> {
    for (const entry of this.#graphs.values()) if (this.#fetched.has(entry)) yield entry;
  }

  /**
   * The image of `key` with its bytes, read from its file; undefined when none is held. The bytes must match
   * the held ETag: a file gone, unreadable or changed since (removed or edited by hand) is dropped from the
   * index, so the list stops naming it and the next graphs poll writes it again. An image replaced by `put`
   * while it was read is read again.
   */
  async get(key: GraphKey): Promise<StoredGraph | undefined> {
    const k = keyOf(key);
    for (let read = 0; read < 3; read++) {
      const entry = this.#graphs.get(k);
      if (!entry || entry.png) return entry as StoredGraph | undefined;
      const png = await this.#read(this.#file(key));
      if (png && etagOf(png) === entry.etag) return { ...entry, png };
      if (this.#graphs.get(k) !== entry) continue;
      this.#graphs.delete(k);
      this.#changes++;
      return undefined;
    }
    return undefined;
  }

  /** Every held image, without its bytes, ordered by server, type and scale. */
  list(): HeldGraph[] {
    return [...this.#graphs.values()]
      .map(({ png: _png, ...held }) => held)
      .sort((a, b) => byCodeUnits(keyOf(a), keyOf(b)));
  }

  /**
   * Writes a checked PNG to disk (atomically: temp file, then rename), then holds it; throws when the file
   * could not be written (that image's poll fails, the image held before stays). A server removed while the
   * file is written (`removeServer`, `retainServers` without it) gets nothing back: the file written is
   * deleted, nothing is held or mirrored. The removal waits for the mirror's copy too, so the mirror's
   * removal comes after it.
   */
  async put(
    key: GraphKey,
    image: { png: Buffer; width: number; height: number },
    updatedAt: number,
  ): Promise<StoredGraph> {
    const { png, width, height } = image;
    const held: HeldGraph = { ...key, width, height, bytes: png.length, etag: etagOf(png), updatedAt };
    const stored = { ...held, png };
    // In flight until the file is written and the copy to the mirror has settled: a removal meanwhile waits
    // for both, so its DELETE comes after this INSERT (on another pool connection it could overtake it).
    const writing = { serverId: key.serverId, dropped: false, written: Promise.resolve() as Promise<unknown> };
    const work = (async () => {
      if (SAFE_ID.test(key.serverId)) {
        const file = this.#file(key);
        await mkdir(join(file, '..'), { recursive: true });
        await writeFile(`${file}.tmp`, png);
        await rename(`${file}.tmp`, file);
      }
      // Removed meanwhile: nothing is held or mirrored; the removal deletes the file once written.
      if (writing.dropped) return;
      const entry: Entry = SAFE_ID.test(key.serverId) ? held : stored;
      this.#graphs.set(keyOf(key), entry);
      this.#fetched.add(entry);
      this.#changes++;
      await this.#mirror?.put(stored);
    })();
    writing.written = work.catch(() => undefined);
    this.#writing.add(writing);
    try {
      await work;
    } catch (error) {
      if (!writing.dropped) throw error;
    } finally {
      this.#writing.delete(writing);
    }
    return stored;
  }

  #file(key: GraphKey): string {
    return join(this.#dir, key.serverId, `${key.type}-${key.scale}.png`);
  }

  /** Marks the puts in flight of the servers removed as dropped, and waits for their writes (then deleted). */
  async #drop(removed: (writing: { serverId: string }) => boolean): Promise<void> {
    const writes = [...this.#writing].filter(removed);
    for (const writing of writes) writing.dropped = true;
    await Promise.all(writes.map((writing) => writing.written));
  }

  /** Drops every image of a server that is gone, from memory and disk. */
  async removeServer(serverId: string): Promise<void> {
    for (const [k, graph] of this.#graphs) if (graph.serverId === serverId) this.#graphs.delete(k);
    this.#changes++;
    await this.#drop((writing) => writing.serverId === serverId);
    if (SAFE_ID.test(serverId)) await rm(join(this.#dir, serverId), { recursive: true, force: true });
    await this.#mirror?.removeServer(serverId);
  }

  /**
   * Drops every image of a server not in `serverIds`, from memory and disk (also directories that held
   * nothing loadable), e.g. servers deleted while the daemon was down. Returns the keys dropped from memory.
   */
  async retainServers(serverIds: ReadonlySet<string>): Promise<GraphKey[]> {
    const dropped: GraphKey[] = [];
    for (const [k, graph] of this.#graphs) {
      if (serverIds.has(graph.serverId)) continue;
      this.#graphs.delete(k);
      dropped.push({ serverId: graph.serverId, type: graph.type, scale: graph.scale });
    }
    if (dropped.length > 0) this.#changes++;
    await this.#drop((writing) => !serverIds.has(writing.serverId));
    const onDisk = await readdir(this.#dir).catch(() => [] as string[]);
    // Only names this store could have written: anything else in the directory is not ours to delete.
    for (const serverId of onDisk.filter((s) => SAFE_ID.test(s) && !serverIds.has(s))) {
      await rm(join(this.#dir, serverId), { recursive: true, force: true });
    }
    await this.#mirror?.retainServers(serverIds);
    return dropped;
  }

  /**
   * Loads the images a previous run left on disk. Unreadable files (and files that are not regular files,
   * with a log line) are skipped. Returns how many loaded.
   */
  async load(): Promise<number> {
    if (this.#legacyDir !== undefined) await adopt(this.#legacyDir, this.#dir);
    let servers: string[];
    try {
      servers = await readdir(this.#dir);
    } catch {
      return 0;
    }
    let loaded = 0;
    for (const serverId of servers.filter((s) => SAFE_ID.test(s))) {
      for (const name of await readdir(join(this.#dir, serverId)).catch(() => [] as string[])) {
        const match = FILE.exec(name);
        if (!match || !(GRAPH_TYPES as readonly string[]).includes(match[1]!)) continue;
        const file = join(this.#dir, serverId, name);
        try {
          const png = await this.#read(file);
          if (png === undefined) continue;
          const { width, height } = pngSize(png);
          const { mtimeMs } = await stat(file);
          const key = { serverId, type: match[1] as GraphType, scale: match[2] as GraphScale };
          if (!(GRAPH_SCALES as readonly string[]).includes(key.scale)) continue;
          this.#graphs.set(keyOf(key), {
            ...key,
            width,
            height,
            bytes: png.length,
            etag: etagOf(png),
            updatedAt: Math.floor(mtimeMs),
          });
          loaded++;
        } catch {
          // A half-written or corrupt file from a crash: the next poll replaces it.
        }
      }
    }
    return loaded;
  }
}

/** Moves `from` to `to` when `from` exists and `to` does not (one rename: no half-moved state). */
async function adopt(from: string, to: string): Promise<void> {
  const exists = (path: string) =>
    access(path).then(
      () => true,
      () => false,
    );
  if (!(await exists(from)) || (await exists(to))) return;
  await mkdir(join(to, '..'), { recursive: true });
  await rename(from, to);
}
