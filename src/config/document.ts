/**
 * The config document validated by the schema (config/schema.ts, with the format keywords of
 * config/formats.ts): Ajv's findings as `key: message` lines, and a view of the document for the checks that
 * read files or compare keys (config/credentials.ts, config/upstream-accounts.ts, config/database.ts). A check reads
 * a value only if the schema found nothing wrong at that key, so one problem is one line.
 */
import { Ajv, type ErrorObject } from 'ajv';
import type { FileKind } from '../read-bounded-file.js';
import { closestKey } from './closest-key.js';
import { FORMAT_KEYWORDS } from './formats.js';
import { configFileSchema, SCHEMA_ANNOTATIONS, type ConfigFile } from './schema.js';

/**
 * Reads the text of a file the config names; `kind` picks its cap (see readBoundedFile). Synchronous: the
 * files are read beforehand, asynchronously (configFromDocument).
 */
export type ReadFile = (path: string, kind: FileKind) => string;

/** Environment variables that override file values (secrets belong here or in files, not in YAML). */
export interface ConfigEnv {
  BAREMETAL_API_URL?: string | undefined;
  BAREMETAL_API_KEY?: string | undefined;
  BAREMETAL_DATABASE_URL?: string | undefined;
}

const ajv = new Ajv({
  allErrors: true,
  useDefaults: true,
  strict: true,
  // An error carries the schema it failed (parentSchema): the known keys an unknown key is compared with.
  verbose: true,
  keywords: [...SCHEMA_ANNOTATIONS, ...FORMAT_KEYWORDS],
});
const validateFile = ajv.compile<ConfigFile>(configFileSchema);

/**
 * The key an Ajv error is about (`upstream.timeout`; for an unknown key, that key) and its line; an unknown key
 * close to a known one says which (`unknown key; did you mean require_approval?`).
 */
function describe(error: ErrorObject): { key: string; line: string } {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (error.keyword === 'additionalProperties') {
    const key = [path, String(error.params.additionalProperty)].filter(Boolean).join('.');
    const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
    const hint = closestKey(String(error.params.additionalProperty), known);
    return { key, line: `${key}: unknown key${hint ? `; did you mean ${hint}?` : ''}` };
  }
  if (error.keyword === 'enum') {
    return {
      key: path,
      line: `${path}: must be one of ${(error.params.allowedValues as unknown[]).map(String).join(', ')}`,
    };
  }
  if (error.keyword === 'type') return { key: path, line: `${path || '(top level)'}: ${typeProblem(error)}` };
  return { key: path, line: `${path || '(top level)'}: ${error.message ?? 'invalid'}` };
}

/**
 * A value of the wrong type, named by its type only (a value may be a secret: `api_key: 12345`). A duration
 * given as a bare number (`attack_window: 15`) is told it needs its unit, as Prometheus's duration format does.
 */
function typeProblem(error: ErrorObject): string {
  const data: unknown = error.data;
  const got = `got ${data === null ? 'null' : Array.isArray(data) ? 'a list' : `a ${typeof data === 'object' ? 'map' : typeof data}`}`;
  const duration = (error.parentSchema as { duration?: string | { example: string } } | undefined)?.duration;
  if (duration === undefined) return `${error.message ?? 'invalid'} (${got})`;
  const example = typeof duration === 'object' ? duration.example : duration;
  const unit = typeof data === 'number' ? `; a duration needs its unit, e.g. "${data}s"` : '';
  return `must be a duration such as "${example}" (${got}${unit})`;
}

/**
 * A document after the schema: its lines (`schemaLines`), the problems the checks add (`problems`), and
 * typed reads of keys the schema did not reject. Ajv fills in defaults even where it finds errors, so the
 * checks see the same document either way.
 */
export class ConfigDocument {
  /** the schema's findings, one `key: message` line each */
  readonly schemaLines: string[];
  /** the checks' findings, one `key: message` line each */
  readonly problems: string[] = [];
  /** the top-level keys the file itself has (before Ajv filled in defaults) */
  readonly raw: Set<string>;
  readonly doc: Record<string, unknown>;
  readonly #rejected: string[];

  constructor(doc: Record<string, unknown>) {
    this.raw = new Set(Object.keys(doc));
    this.doc = doc;
    const errors = validateFile(doc) ? [] : (validateFile.errors ?? []).map(describe);
    this.schemaLines = errors.map((e) => e.line);
    this.#rejected = errors.map((e) => e.key);
  }

  /** The schema rejected `key` (dotted) or an object it sits in. */
  rejected(key: string): boolean {
    return this.#rejected.some((k) => k === key || key.startsWith(`${k}.`));
  }

  /** The value at `key` unless the schema rejected it or an object it sits in. */
  value(key: string): unknown {
    if (this.rejected(key)) return undefined;
    let node: unknown = this.doc;
    for (const part of key.split('.'))
      node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
    return node;
  }

  text(key: string): string | undefined {
    const value = this.value(key);
    return typeof value === 'string' ? value : undefined;
  }

  /** Every line, the schema's first; none when the document is a valid ConfigFile and every check passed. */
  lines(): string[] {
    return [...this.schemaLines, ...this.problems];
  }
}
