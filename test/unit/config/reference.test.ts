import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configKeys, configTable } from '../../../src/config/reference.js';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const example = readFileSync(new URL('../../../examples/config.yml', import.meta.url), 'utf8');

/** The README's table under "## Configuration", from its header row to the first line that is not a row. */
function readmeTable(): string {
  const start = readme.indexOf('| key | default | meaning |');
  const lines = readme.slice(start).split('\n');
  return lines
    .slice(
      0,
      lines.findIndex((line) => !line.startsWith('|')),
    )
    .join('\n');
}

describe('configuration reference', () => {
  it('is the README configuration table, row for row (regenerate it from configTable() when the schema changes)', () => {
    expect(readmeTable()).toBe(configTable());
  });

  it.each(configKeys().map((k) => [k.key, k] as const))('%s has a description', (_key, k) => {
    expect(k.description.length).toBeGreaterThan(5);
  });

  // The rule keys are documented in the README's Remediation section; the example has `rules: []`.
  it.each(
    configKeys()
      .filter((k) => !k.key.includes('[]'))
      .map((k) => [k.key] as const),
  )('%s appears in examples/config.yml', (key) => {
    const name = key.split('.').at(-1)!;
    expect(example).toMatch(new RegExp(`\\b${name}\\b`));
  });
});
