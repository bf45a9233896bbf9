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

/**
 * `baseUrl` fit to print (check-config, logs): its userinfo and every query value, which may hold a password
 * or a token, replaced by `***` as a whole; a text that is not a URL is replaced by `[unparsable URL]`.
 */
export function redactBaseUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return '[unparsable URL]';
  }
  if (url.username === '' && url.password === '' && url.search === '') return baseUrl;
  if (url.username !== '' || url.password !== '') {
    url.username = '***';
    url.password = '';
  }
  for (const key of new Set(url.searchParams.keys())) url.searchParams.set(key, '***');
  return url.href.replace(/\/+$/, '');
}

/** The secrets of `baseUrl`'s userinfo (user and password, percent-decoded), to scrub from texts; none without. */
export function baseUrlSecrets(baseUrl: string): string[] {
  try {
    const url = new URL(baseUrl);
    return [url.username, url.password].filter((s) => s.length > 0).map((s) => decodeURIComponent(s));
  } catch {
    return [];
  }
}
