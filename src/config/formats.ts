/**
 * The config schema's formats, as Ajv keywords (config/schema.ts tags a key with one; config/load.ts compiles the
 * schema with them): a failed format is an Ajv error like any other, one `key: message` line.
 *
 * - `duration: "10s"` (the example the message gives) or `{example, zero: true}` ("0" and "0s" also allowed)
 *   or `{example, max}` (at most `max`): a positive duration in Prometheus's format ("250ms", "10s", "1h30m",
 *   `prometheusDurationMs`), at most about 292y as Prometheus reads them;
 * - `cron: true`: a node-cron expression, seconds field allowed;
 * - `listenAddress: true`: `host:port` or `[::1]:port`, port 0…65535;
 * - `bcrypt: "key"` (the user is the key of the map the hash is a value of) or `"name"` (the user is the
 *   sibling `name`): a usable bcrypt hash (bcryptHashProblem).
 */
import type { ErrorObject, FuncKeywordDefinition, SchemaValidateFunction } from 'ajv';
import cron from 'node-cron';

/**
 * Prometheus's duration format, as its `model.ParseDuration` reads it: units from the largest down, each at
 * most once, integers only (`1h30m`, `90s`, `500ms`, `7d`, `2w`, `1y`; a year is 365 days, a week 7 days),
 * or `0`. `1.5h`, `5 minutes` and `-1s` are no durations.
 */
const PROMETHEUS_DURATION = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const UNIT_MS = [365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1] as const;

/**
 * The longest duration Prometheus reads, ms: its durations are int64 nanoseconds, so `model.ParseDuration` refuses
 * anything past 2^63 - 1 ns (about 292 years) as out of range.
 */
export const MAX_PROMETHEUS_DURATION_MS = Math.floor((2 ** 63 - 1) / 1e6);

/**
 * `text` in Prometheus's duration format (PROMETHEUS_DURATION), in ms; undefined when it is none, or longer
 * than Prometheus allows (MAX_PROMETHEUS_DURATION_MS, about 292y).
 */
export function prometheusDurationMs(text: string): number | undefined {
  if (text === '0') return 0;
  const match = text === '' ? null : PROMETHEUS_DURATION.exec(text);
  if (!match) return undefined;
  const total = UNIT_MS.reduce((sum, unit, i) => sum + Number(match[i + 1] ?? 0) * unit, 0);
  return Number.isSafeInteger(total) && total <= MAX_PROMETHEUS_DURATION_MS ? total : undefined;
}

/** Whether `text` has the duration format but is longer than Prometheus allows (about 292y). */
const tooLong = (text: string): boolean =>
  PROMETHEUS_DURATION.test(text) && text !== '' && prometheusDurationMs(text) === undefined;

/** Parses a positive duration in Prometheus's format ("10s", "1h30m", "250ms") into ms; undefined otherwise. */
export function parseDuration(text: string): number | undefined {
  const value = prometheusDurationMs(text);
  return value !== undefined && value > 0 ? value : undefined;
}

/** Splits "host:port" or "[::1]:port" (port 0 allowed: pick a free one). */
export function parseListenAddress(text: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65535) return undefined;
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

/**
 * A bcrypt hash as htpasswd and bcryptjs write it: `$2a$`, `$2b$` or `$2y$`. The original `$2$` and the
 * broken-implementation marker `$2x$` are not: bcryptjs compares no password with them as equal.
 */
export const BCRYPT_HASH = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;

/**
 * What is wrong with `hash`, the bcrypt hash of `user`, as a sentence: a bcrypt variant other than `$2a$`,
 * `$2b$`, `$2y$`, or a cost outside 4…MAX_BCRYPT_COST; `notBcrypt` when it is no bcrypt hash at all;
 * undefined when it is usable.
 */
export function bcryptHashProblem(user: string, hash: string, notBcrypt: string): string | undefined {
  if (BCRYPT_HASH.test(hash)) return bcryptCostProblem(user, hash);
  const variant = /^\$(2[a-z]?)\$\d{2}\$/.exec(hash)?.[1];
  if (variant !== undefined)
    return `the bcrypt hash of user ${user} is of variant $${variant}$, which never matches a password; only $2a$, $2b$ and $2y$ are supported: hash the password again (htpasswd -nbB ${user} PASSWORD)`;
  return notBcrypt;
}

/**
 * The highest bcrypt cost accepted: one check at cost 14 takes about a second on one core, and each step up
 * doubles it; a cost-31 hash would hold the only bcrypt worker for days at every uncached login.
 */
export const MAX_BCRYPT_COST = 14;

/**
 * The cost (log2 of the rounds) `hash`, a bcrypt hash (`$2b$10$…`), names; NaN when it names none. Read here, not
 * by bcryptjs, so that a process loads bcryptjs only in the worker that compares passwords (issue 53).
 */
export const bcryptCost = (hash: string): number => Number(/^\$2[a-z]?\$(\d{2})\$/.exec(hash)?.[1]);

/**
 * What is wrong with the cost of `hash`, a BCRYPT_HASH of `user`: outside 4…MAX_BCRYPT_COST (bcrypt itself
 * allows 4…31), as a sentence naming the user; undefined when it is usable.
 */
export function bcryptCostProblem(user: string, hash: string): string | undefined {
  const cost = bcryptCost(hash);
  if (cost < 4) return `the bcrypt hash of user ${user} has cost ${cost}; bcrypt needs 4 or more`;
  if (cost > MAX_BCRYPT_COST)
    return `the bcrypt hash of user ${user} has cost ${cost}, above ${MAX_BCRYPT_COST}: each login would take minutes to days; hash the password again with cost ${MAX_BCRYPT_COST} or less (htpasswd -B -C 10)`;
  return undefined;
}

/**
 * `duration`'s schema value: the example its message gives, whether "0"/"0s" (no delay) is allowed, and the
 * longest value the key takes (`max`, a duration; where a longer one makes no sense: remediation.approval_timeout,
 * a rule's or step's verify_within).
 */
export type DurationFormat = string | { example: string; zero?: true; max?: string };

/** The duration `text` stands for, in ms, under `format`; undefined when it is none (or beyond `max`). */
export function durationMs(format: DurationFormat, text: string): number | undefined {
  if (typeof format === 'object' && format.zero === true && (text === '0' || text === '0s')) return 0;
  const ms = parseDuration(text);
  if (ms === undefined || typeof format !== 'object' || format.max === undefined) return ms;
  return ms <= parseDuration(format.max)! ? ms : undefined;
}

/** Why `text` is no duration under `format`, as the config's problem line says it; undefined when it is one. */
export function durationProblem(format: DurationFormat, text: string): string | undefined {
  if (durationMs(format, text) !== undefined) return undefined;
  const got = `(got ${JSON.stringify(text)})`;
  if (tooLong(text)) return `must be at most about 292y, the longest duration Prometheus reads ${got}`;
  if (typeof format === 'object' && format.max !== undefined && parseDuration(text) !== undefined)
    return `must be at most ${format.max} ${got}`;
  return `must be a duration such as "${typeof format === 'object' ? format.example : format}" ${got}`;
}

/**
 * A string keyword whose problem with a value (given the keyword's schema value and the value's parent and
 * key) is one sentence, undefined when there is none.
 */
function stringKeyword<S>(
  keyword: string,
  schemaType: NonNullable<FuncKeywordDefinition['schemaType']>,
  problem: (schema: S, text: string, parent: Record<string, unknown>, key: string | number) => string | undefined,
): FuncKeywordDefinition {
  const validate: SchemaValidateFunction = (schema: S, data: string, _parentSchema, context) => {
    const message = problem(
      schema,
      data,
      (context?.parentData ?? {}) as Record<string, unknown>,
      context?.parentDataProperty ?? '',
    );
    validate.errors = message === undefined ? [] : [{ keyword, message, params: {} } satisfies Partial<ErrorObject>];
    return message === undefined;
  };
  return { keyword, type: 'string', schemaType, errors: true, validate };
}

/** The keywords, for `new Ajv({keywords})`. */
export const FORMAT_KEYWORDS: FuncKeywordDefinition[] = [
  stringKeyword<DurationFormat>('duration', ['string', 'object'], (format, text) => durationProblem(format, text)),
  stringKeyword<true>('cron', 'boolean', (_, text) =>
    cron.validate(text) ? undefined : `must be a cron expression, seconds allowed (got ${JSON.stringify(text)})`,
  ),
  stringKeyword<true>('listenAddress', 'boolean', (_, text) =>
    parseListenAddress(text) ? undefined : `must be "host:port" (got ${JSON.stringify(text)})`,
  ),
  stringKeyword<'key' | 'name'>('bcrypt', 'string', (userIs, hash, parent, key) => {
    const user = userIs === 'key' ? String(key) : String(parent.name);
    return bcryptHashProblem(user, hash, 'must be a bcrypt hash ($2b$…), never a plain password');
  }),
];
