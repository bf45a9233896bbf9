import { expect } from 'vitest';
import { ConfigError } from '../../src/errors.js';

/**
 * The problems of the ConfigError that `build` throws (a config loader, parser or flag check): one line each,
 * as `check-config` prints them. Anything else thrown fails the test; so does nothing thrown, unless
 * `orNone` is set, when a valid input gives [].
 */
export function configProblems(build: () => unknown, { orNone = false } = {}): string[] {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  if (orNone) return [];
  throw new Error('expected a ConfigError, and nothing was thrown');
}
