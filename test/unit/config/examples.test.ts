import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';

describe('examples/config.yml', () => {
  it('is a valid config whose values are the documented defaults', () => {
    const text = readFileSync(new URL('../../../examples/config.yml', import.meta.url), 'utf8');
    const example = parseConfigText(text, { BAREMETAL_API_KEY: 'k' });
    const defaults = parseConfigText('upstream: { base_url: "https://api.provider.example" }', {
      BAREMETAL_API_KEY: 'k',
    });
    expect(example).toEqual(defaults);
  });
});
