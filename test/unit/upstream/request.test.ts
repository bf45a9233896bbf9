/**
 * The form body of a request (request.ts `formBody`): written by hand for ids, scales and IPs, it must be
 * byte for byte what URLSearchParams writes, whatever the keys and values (fast-check), undefined values left out.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formBody } from '../../../src/upstream/request.js';

const viaUrlSearchParams = (body: Record<string, string | undefined>) => {
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(body)) if (value !== undefined) form.set(key, value);
  return form.toString();
};

describe('formBody', () => {
  it('writes what URLSearchParams writes', () => {
    for (const body of [
      {},
      { server_id: '100001', scale: 'hour' },
      { server_id: '100001', scale: 'hour', ip: undefined },
      { server_id: '100001', ip: '2001:db8::1' },
      { reason: 'a b&c=d+e/é', server_id: '7' },
      { 'k e y': '1', other: '*-._~!()' },
    ])
      expect(formBody(body), JSON.stringify(body)).toBe(viaUrlSearchParams(body));
  });

  it('writes what URLSearchParams writes, for any keys and values', () => {
    const text = fc.oneof(fc.string(), fc.stringMatching(/^[A-Za-z0-9*._-]*$/), fc.string({ unit: 'grapheme' }));
    fc.assert(
      fc.property(fc.dictionary(text, fc.option(text, { nil: undefined })), (body) => {
        expect(formBody(body)).toBe(viaUrlSearchParams(body));
      }),
    );
  });
});
