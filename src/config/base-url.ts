/**
 * The upstream base URL rule (per the API contract, §5.4: HTTPS only; plain HTTP to a loopback host, for the
 * simulator and tests). Apart from the client so that the config loader checks it without loading undici.
 */
import { InsecureUrlError } from '../errors.js';

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Returns the normalized base URL (no trailing slash). Throws InsecureUrlError for http:// to a
 * non-loopback host and TypeError for something that is not an http(s) URL.
 */
export function checkBaseUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname)) throw new InsecureUrlError(url.origin);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new TypeError(`unsupported protocol ${url.protocol}`);
  return url.href.replace(/\/+$/, '');
}
