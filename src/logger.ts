/**
 * The daemon's logger: pino with the paths that could hold a secret redacted, string levels and ISO-8601
 * timestamps, written as logfmt (the Prometheus ecosystem's default, `--log.format=logfmt`) or JSON.
 * pino has no logfmt output and the logfmt transports on npm run in a worker thread (lines lost on a
 * crash, a thread per process) or are unmaintained, so logfmt is a small synchronous destination here.
 */
import { writeSync } from 'node:fs';
import pino, { type Logger } from 'pino';

/** Paths pino removes from every log line: the API key must never be logged. */
export const REDACT_PATHS = [
  'apiKey',
  'api_key',
  '*.apiKey',
  '*.api_key',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.http_authorization',
  '*.headers.authorization',
];

export const LOG_FORMATS = ['logfmt', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** One logfmt value: bare when it is a plain token, else quoted with `"` and `\` escaped. */
function logfmtValue(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
  return /^[^\s"=\\]+$/.test(text)
    ? text
    : `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** A pino JSON line → a logfmt line: `ts=… level=… msg=…` first, then the other fields in order. */
export function toLogfmt(line: string): string {
  const { time, level, msg, ...rest } = JSON.parse(line) as Record<string, unknown>;
  const fields: Array<[string, unknown]> = [
    ['ts', time],
    ['level', level],
    ...(msg === undefined ? [] : [['msg', msg] as [string, unknown]]),
    ...Object.entries(rest),
  ];
  return `${fields.map(([key, value]) => `${key}=${logfmtValue(value)}`).join(' ')}\n`;
}

/** A synchronous destination writing logfmt to a file descriptor (default stdout). */
export function logfmtDestination(fd = 1): pino.DestinationStream {
  return { write: (line: string) => void writeSync(fd, toLogfmt(line)) };
}

/**
 * A pino logger with the redaction paths set, string levels and ISO timestamps, written to `destination`
 * (pino's JSON lines) or else to stdout as `format`: logfmt by default, as `run` and `demo` log.
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  format: LogFormat = 'logfmt',
): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      base: null,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? (format === 'logfmt' ? logfmtDestination() : undefined),
  );
}
