import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/definitions.js';
import { DECISIONS } from '../../../src/store/decisions.js';

describe('decisions', () => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const registry = new Registry();
  createMetrics(registry);
  const help = (registry.getSingleMetric('baremetal_action_requests_total') as unknown as { help: string }).help;
  // The README's journal paragraph lists the decisions a row can have.
  const journalParagraph = readme.slice(
    readme.indexOf('The journal is SQLite'),
    readme.indexOf('Try it with the demo'),
  );

  it.each(DECISIONS.map((d) => [d] as const))(
    '%s is in the metric help text and the README journal paragraph',
    (decision) => {
      expect(help).toContain(decision);
      expect(journalParagraph).toContain(`\`${decision}\``);
    },
  );
});
