import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/definitions.js';
import { DECISIONS } from '../../../src/store/decisions.js';

describe('decisions', () => {
  const page = readFileSync(new URL('../../../docs/remediation.md', import.meta.url), 'utf8');
  const registry = new Registry();
  createMetrics(registry);
  const help = (registry.getSingleMetric('baremetal_action_requests_total') as unknown as { help: string }).help;
  // docs/remediation.md's journal paragraph lists the decisions a row can have.
  const journalParagraph = page.slice(
    page.indexOf('The journal is the `actions` table'),
    page.indexOf('Try it with the demo'),
  );

  it.each(DECISIONS.map((d) => [d] as const))(
    '%s is in the metric help text and the docs/remediation.md journal paragraph',
    (decision) => {
      expect(help).toContain(decision);
      expect(journalParagraph).toContain(`\`${decision}\``);
    },
  );
});
