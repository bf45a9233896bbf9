import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configKeys } from '../../../src/config/reference.js';

const example = readFileSync(new URL('../../../examples/config.yml', import.meta.url), 'utf8');

describe('configuration reference', () => {
  it.each(configKeys().map((k) => [k.key, k] as const))('%s has a description', (_key, k) => {
    expect(k.description.length).toBeGreaterThan(5);
  });

  // The rule keys are documented in docs/remediation.md; the example has `rules: []`.
  it.each(
    configKeys()
      .filter((k) => !k.key.includes('[]'))
      .map((k) => [k.key] as const),
  )('%s appears in examples/config.yml', (key) => {
    const name = key.split('.').at(-1)!;
    expect(example).toMatch(new RegExp(`\\b${name}\\b`));
  });
});
