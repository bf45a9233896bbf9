/**
 * The test file of `baremetal-exporter remediation test` (in the spirit of `promtool test rules`): the
 * `remediation:` block under test (or `config_file:`, whose `remediation` and `schedules` are read), an initial
 * world (servers with their IPs, attack events per IP at their times) and a timeline of Alertmanager
 * deliveries and operator steps (approve, deny, withdraw, expire, close_breaker), each with the journal rows it
 * must produce, and the alerts Alertmanager holds from a step on (`alertmanager:`, for the outage gate). Parsed with the `yaml` package and validated with
 * Ajv; a malformed file is a TestFileError naming the file and the line. A file that cannot be read, is larger
 * than the config file's cap, expands more than MAX_ALIASES aliases or nests deeper than MAX_DEPTH is one too.
 */
import { dirname, resolve } from 'node:path';
import { Ajv } from 'ajv';
import type { Static } from 'typebox';
import { isCollection, isMap, isPair, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { parseDuration } from '../config/load.js';
import { BaremetalError } from '../errors.js';
import { readBoundedText, readProblem } from '../read-bounded-file.js';
import type { WebhookBody } from '../remediation/webhook.js';
import { testFileSchema } from './generated/remediation-test-file.js';

/** A malformed test file (exit 2): names the file and the line. */
export class TestFileError extends BaremetalError {}

/** What a step does besides time passing: at most one of these. */
const STEP_KINDS = ['alert', 'alerts', 'payload', 'approve', 'deny', 'withdraw', 'expire', 'close_breaker'] as const;
/** The file's JSON Schema (cli/remediation-test-file.schema.ts, generated into generated/remediation-test-file.ts). */
type FileSchema = Static<typeof testFileSchema>;
type StepSchema = FileSchema['timeline'][number];
export type TestStep = StepSchema & { line: number };
export type ExpectedRow = StepSchema['expect'][number];
export type ExpectedCall = NonNullable<StepSchema['calls']>[number];
export type ShortAlert = NonNullable<StepSchema['alert']>;

/** A test file, read: what `runTestFile` runs. Times (`at`) are ms after the start. */
export interface TestFile {
  path: string;
  /** the remediation block and schedules in the config file's shape */
  config: { remediation: Record<string, unknown>; schedules?: Record<string, unknown> };
  servers: Array<{ id: string; ips: string[]; attacks: Array<{ ip: string; at: number }> }>;
  timeline: Array<TestStep & { atMs: number; deliveries: WebhookBody | undefined }>;
}

// Every error, so that an unknown key (most often a typo) is the one shown rather than the required key it
// was meant to be.
const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
const validate = ajv.compile(testFileSchema);

/** The most aliases (`*name`) a test file may resolve: the `yaml` library's guard against an alias bomb. */
export const MAX_ALIASES = 100;
/** The deepest nesting of maps and lists a test file may have (its own shape needs fewer than 10). */
export const MAX_DEPTH = 64;

/**
 * The YAML document at `path` (a test file, or the config file it names) as plain data, with its document and
 * line counter. Throws TestFileError naming `path` for a file that cannot be read (missing, not a file, too
 * large), a syntax error, too many aliases or too deep a nesting.
 */
async function readYaml(path: string): Promise<{ doc: Document; raw: unknown; lineOf: (offset?: number) => number }> {
  let text: string;
  try {
    text = await readBoundedText(path, 'config');
  } catch (error) {
    throw new TestFileError(`${path}: cannot read the file (${readProblem(error)})`, { cause: error });
  }
  const lines = new LineCounter();
  const lineOf = (offset: number | undefined) => (offset === undefined ? 1 : lines.linePos(offset).line);
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    const error = doc.errors[0]!;
    // The parser is recursive: it reports its own stack overflow as a syntax error at the deepest point.
    const message = /call stack/i.test(error.message) ? `nested deeper than ${MAX_DEPTH} levels` : error.message;
    throw new TestFileError(`${path}:${lineOf(error.pos[0])}: ${message.split('\n')[0]}`);
  }
  const deep = tooDeep(doc.contents);
  if (deep !== undefined) throw new TestFileError(`${path}:${lineOf(deep)}: nested deeper than ${MAX_DEPTH} levels`);
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    // An alias bomb: yaml throws a ReferenceError once the aliases resolved pass maxAliasCount.
    if (!(error instanceof ReferenceError || error instanceof RangeError)) throw error;
    throw new TestFileError(
      `${path}: its aliases expand too far (more than ${MAX_ALIASES} resolved, or nested deeper than ${MAX_DEPTH} levels)`,
    );
  }
  if (depthOf(raw) > MAX_DEPTH)
    throw new TestFileError(`${path}: nested deeper than ${MAX_DEPTH} levels (through aliases)`);
  return { doc, raw, lineOf };
}

/** The offset of the first node nested deeper than MAX_DEPTH maps and lists, walked without recursion. */
function tooDeep(root: unknown): number | undefined {
  const stack: Array<[node: unknown, depth: number]> = [[root, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (isPair(node)) {
      stack.push([node.key, depth], [node.value, depth]);
    } else if (isCollection(node)) {
      if (depth > MAX_DEPTH) return node.range?.[0];
      for (const item of node.items) stack.push([item, depth + 1]);
    }
  }
  return undefined;
}

/** How deeply plain data nests (aliases resolved), walked without recursion; stops counting past MAX_DEPTH. */
function depthOf(root: unknown): number {
  let deepest = 0;
  const stack: Array<[value: unknown, depth: number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    deepest = Math.max(deepest, depth);
    if (depth > MAX_DEPTH) return depth;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** Reads and validates test file `path`. Throws TestFileError naming the file and the line. */
export async function readTestFile(path: string): Promise<TestFile> {
  const { doc, raw, lineOf } = await readYaml(path);
  if (!validate(raw)) {
    const errors = validate.errors!;
    const error = errors.find((e) => e.keyword === 'additionalProperties') ?? errors[0]!;
    const unknown = error.keyword === 'additionalProperties' ? String(error.params.additionalProperty) : undefined;
    // An unknown key is named, at its own line: "step 3: unknown key `aprove`".
    const line =
      unknown === undefined
        ? nodeLine(doc, error.instancePath, lineOf)
        : keyLine(doc, error.instancePath, unknown, lineOf);
    const message = unknown === undefined ? (error.message ?? 'invalid') : `unknown key \`${unknown}\``;
    throw new TestFileError(`${path}:${line}: ${placeOf(error.instancePath)}${message}`);
  }
  const file = raw as FileSchema;
  const fail = (pointer: string, message: string): never => {
    throw new TestFileError(`${path}:${nodeLine(doc, pointer, lineOf)}: ${message}`);
  };
  const config = await configOf(path, file, fail);
  const timeline = file.timeline.map((s, i) => {
    const pointer = `/timeline/${i}`;
    const given = STEP_KINDS.filter((k) => s[k] !== undefined);
    if (given.length > 1)
      fail(pointer, `step ${i + 1}: give one of ${STEP_KINDS.join(', ')} (got ${given.join(', ')})`);
    if (s.error !== undefined && !given.some((k) => ['approve', 'deny', 'withdraw', 'close_breaker'].includes(k)))
      fail(`${pointer}/error`, `step ${i + 1}: error is for an approve, deny, withdraw or close_breaker step`);
    return {
      ...s,
      line: nodeLine(doc, pointer, lineOf),
      atMs: ms(s.at, `${pointer}/at`, fail),
      deliveries: s.payload,
    };
  });
  for (let i = 1; i < timeline.length; i++)
    if (timeline[i]!.atMs < timeline[i - 1]!.atMs) fail(`/timeline/${i}/at`, 'the timeline must not go back in time');
  const servers = file.servers.map((s, i) => ({
    id: s.id,
    ips: s.ips,
    attacks: s.attacks.map((a, j) => ({ ip: a.ip, at: ms(a.at, `/servers/${i}/attacks/${j}/at`, fail) })),
  }));
  return { path, config, servers, timeline };
}

/**
 * Where a JSON pointer of the file is, as a person reads it: `/timeline/2/alert/labels` is "step 3:
 * alert.labels: ", `/servers/0` "servers.0: ", the top level "".
 */
function placeOf(pointer: string): string {
  const parts = pointer.split('/').slice(1);
  if (parts.length === 0) return '';
  const step = parts[0] === 'timeline' && parts[1] !== undefined ? `step ${Number(parts[1]) + 1}: ` : '';
  const rest = (step ? parts.slice(2) : parts).join('.');
  return `${step}${rest ? `${rest}: ` : ''}`;
}

/** A time of the timeline: 0 (`0s`) or a duration, ms. */
function ms(text: string, pointer: string, fail: (pointer: string, message: string) => never): number {
  if (/^0(ms|s|m|h|d|w|y)$/.test(text)) return 0;
  return (
    parseDuration(text) ??
    fail(pointer, `not a duration in Prometheus's format such as 8m or 1h30m: ${JSON.stringify(text)}`)
  );
}

/** The remediation block under test: the file's own, or the one of its `config_file` (relative to the file). */
async function configOf(
  path: string,
  file: FileSchema,
  fail: (pointer: string, message: string) => never,
): Promise<TestFile['config']> {
  if ((file.remediation === undefined) === (file.config_file === undefined))
    fail('', 'give either remediation or config_file');
  if (file.remediation)
    return {
      remediation: file.remediation as Record<string, unknown>,
      ...(file.schedules ? { schedules: file.schedules } : {}),
    };
  const configPath = resolve(dirname(path), file.config_file!);
  let parsed: unknown;
  try {
    parsed = (await readYaml(configPath)).raw;
  } catch (error) {
    if (!(error instanceof TestFileError)) throw error;
    return fail('/config_file', `config_file: ${error.message}`);
  }
  const config = (parsed ?? {}) as Record<string, unknown>;
  const remediation = (config.remediation ?? {}) as Record<string, unknown>;
  const schedules = (file.schedules ?? config.schedules) as Record<string, unknown> | undefined;
  return { remediation, ...(schedules ? { schedules } : {}) };
}

/** The parts of JSON pointer `pointer`, as `Document.getIn` takes them. */
const pointerParts = (pointer: string) =>
  pointer
    .split('/')
    .slice(1)
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p.replaceAll('~1', '/').replaceAll('~0', '~')));

/** The line of key `key` of the map at JSON pointer `pointer` (the map's line when not found). */
function keyLine(doc: Document, pointer: string, key: string, lineOf: (offset: number | undefined) => number): number {
  const map = doc.getIn(pointerParts(pointer), true);
  const node = (isMap(map) ? map : pointer === '' && isMap(doc.contents) ? doc.contents : undefined)?.items.find(
    (pair) => isScalar(pair.key) && pair.key.value === key,
  )?.key as { range?: [number, number, number] } | undefined;
  return node?.range ? lineOf(node.range[0]) : nodeLine(doc, pointer, lineOf);
}

/** The line of the node at JSON pointer `pointer` (its nearest existing ancestor). */
function nodeLine(doc: Document, pointer: string, lineOf: (offset: number | undefined) => number): number {
  const parts = pointerParts(pointer);
  for (let n = parts.length; n >= 0; n--) {
    const node = doc.getIn(parts.slice(0, n), true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return lineOf(node.range[0]);
  }
  return 1;
}
