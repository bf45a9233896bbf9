import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { describe, expect, it } from 'vitest';
import * as errors from '../../src/errors.js';

const ctx = { operation: 'op', path: '/p', status: 500 };
const instances = {
  BaremetalError: new errors.BaremetalError('x'),
  ConfigError: new errors.ConfigError(['a: b']),
  InvalidParameterError: new errors.InvalidParameterError('op', 'p', 'bad'),
  InsecureUrlError: new errors.InsecureUrlError('http://x'),
  UpstreamError: new errors.UpstreamError(ctx, 'x'),
  ApiError: new errors.ApiError(ctx, 'x'),
  HttpStatusError: new errors.HttpStatusError({ ...ctx, status: 502 }, 'x'),
  InvalidReplyError: new errors.InvalidReplyError(ctx, 'x', ''),
  UpstreamTimeoutError: new errors.UpstreamTimeoutError(ctx, 'x'),
  UpstreamTlsError: new errors.UpstreamTlsError(ctx, 'x'),
  UpstreamConnectionError: new errors.UpstreamConnectionError(ctx, 'x'),
  UpstreamRequestError: new errors.UpstreamRequestError(ctx, 'x'),
  ResponseTooLargeError: new errors.ResponseTooLargeError(ctx, 'x'),
  RateLimitedError: new errors.RateLimitedError(ctx, 0),
  UpstreamCancelledError: new errors.UpstreamCancelledError(ctx, 'x'),
  GraphDecodeError: new errors.GraphDecodeError('x'),
  NotFoundError: new errors.NotFoundError('x'),
  JournalError: new errors.JournalError('x'),
  StaleLeaseError: new errors.StaleLeaseError('acme', '1'),
  NotReadyError: new errors.NotReadyError('x'),
  BadRequestError: new errors.BadRequestError('x'),
  AuthError: new errors.AuthError('x'),
  ForbiddenError: new errors.ForbiddenError('x'),
  AuthBusyError: new errors.AuthBusyError('x', 1),
  AuthRateLimitedError: new errors.AuthRateLimitedError('x', 1),
  RequestTimeoutError: new errors.RequestTimeoutError('x'),
  HeadersTooLargeError: new errors.HeadersTooLargeError('x'),
  IdempotencyMismatchError: new errors.IdempotencyMismatchError('x'),
  ConflictError: new errors.ConflictError('x'),
  ApprovedNotSentError: new errors.ApprovedNotSentError('x'),
  StateDirLockedError: new errors.StateDirLockedError('/d', 1),
  AlertmanagerError: new errors.AlertmanagerError('x'),
} satisfies Record<keyof typeof errors.errorClasses, Error>;

describe('error catalogue', () => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

  it('has one instance per class in errorClasses', () => {
    expect(Object.keys(instances).sort()).toEqual(Object.keys(errors.errorClasses).sort());
  });

  it('gives every class a unique code', () => {
    const codes = Object.values(instances).map((e) => e.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  /** The HTTP status column of the row of `code`. */
  const statusColumn = (code: string) =>
    doc
      .split('\n')
      .find((line) => line.startsWith(`| \`${code}\` |`))
      ?.split(' | ')[2];

  it.each(Object.entries(instances))(
    'documents %s with its code, class and HTTP status in docs/errors.md',
    (name, error) => {
      expect(doc).toContain(`| \`${error.code}\` | \`${name}\` |`);
      expect(error.name).toBe(name);
      const status = statusColumn(error.code);
      // `—`: raised outside a request, so the class keeps the base's 500 (never an HTTP-facing status).
      if (status === '—') expect(error.statusCode).toBe(500);
      else expect(status).toBe(`${error.statusCode} ${STATUS_CODES[error.statusCode]}`);
    },
  );

  it('documents the code of unexpected failures with its status', () => {
    expect(statusColumn(errors.INTERNAL_ERROR_CODE)).toBe('500 Internal Server Error');
  });

  it('keeps the cause', () => {
    const cause = new Error('root');
    expect(new errors.UpstreamTlsError(ctx, 'x', { cause }).cause).toBe(cause);
  });
});
