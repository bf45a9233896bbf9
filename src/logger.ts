/** The daemon's logger: pino with the paths that could hold a secret redacted. */
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

/** A pino logger with the redaction paths set. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[REDACTED]' } }, destination);
}
