import { describe, expect, it } from 'vitest';
import { redactBaseUrl } from '../../../src/config/base-url.js';

describe('redactBaseUrl', () => {
  it.each([
    ['no secrets: as written', 'https://api.provider.test/v1', 'https://api.provider.test/v1'],
    ['userinfo as a whole', 'https://user:s3cret@api.provider.test', 'https://***@api.provider.test'],
    ['every query value', 'https://api.provider.test/?token=s3cret&a=1', 'https://api.provider.test/?token=***&a=***'],
    ['not a URL', 'api provider', '[unparsable URL]'],
  ])('%s', (_case, url, printed) => {
    expect(redactBaseUrl(url)).toBe(printed);
  });
});
