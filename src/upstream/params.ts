/**
 * Allowed parameter values of the API and their validation, done before any request is sent.
 * Every list here is quoted from the API contract, §2 and §4.
 */
import { execFile } from 'node:child_process';
import { InvalidParameterError } from '../errors.js';
import { isFQDN, isIP } from './validators.js';

/** Throws InvalidParameterError unless `value` is a non-empty identifier (no whitespace, ≤ 128 chars). */
export function requireId(operation: string, name: string, value: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new InvalidParameterError(operation, name, 'must be a non-empty identifier');
  }
  if (value.length > 128 || /\s/.test(value)) {
    throw new InvalidParameterError(operation, name, 'must be at most 128 characters without whitespace');
  }
  return value;
}

/** Throws InvalidParameterError unless `value` is one of `allowed`. */
export function requireOneOf<T extends string>(
  operation: string,
  name: string,
  value: string,
  allowed: readonly T[],
): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new InvalidParameterError(
      operation,
      name,
      `must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`,
    );
  }
  return value as T;
}

/** Throws InvalidParameterError unless `value` is an IPv4 or IPv6 address. */
export function requireIp(operation: string, value: string): string {
  if (typeof value !== 'string' || !isIP(value)) {
    throw new InvalidParameterError(operation, 'ip', `must be an IPv4 or IPv6 address (got ${JSON.stringify(value)})`);
  }
  return value;
}

/** Throws InvalidParameterError unless `value` is a fully qualified hostname (contract §4, Reverse DNS). */
export function requireHostname(operation: string, value: string): string {
  const name = typeof value === 'string' ? value.replace(/\.$/, '') : '';
  if (!isFQDN(name, { require_tld: true, allow_underscores: false, allow_trailing_dot: false })) {
    throw new InvalidParameterError(
      operation,
      'content',
      `must be a fully valid hostname (got ${JSON.stringify(value)})`,
    );
  }
  return value;
}

/**
 * Rejects a `post_installation` script that `bash -n` finds a syntax error in (contract §4, rule 4).
 * Resolves with the script; rejects with InvalidParameterError carrying bash's first line of complaint.
 */
export function requireBashSyntax(operation: string, script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('bash', ['-n'], { timeout: 10_000 }, (error, _stdout, stderr) => {
      if (!error) return resolve(script);
      const line =
        String(stderr)
          .split('\n')
          .find((l) => l.trim() !== '') ?? error.message;
      reject(
        new InvalidParameterError(
          operation,
          'post_installation',
          `bash -n rejects the script: ${line.replace(/^bash: /, '')}`,
        ),
      );
    });
    child.stdin?.end(script);
  });
}
