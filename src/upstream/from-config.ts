/** The upstream client built from the `upstream` config block: one place for the daemon and the `api` command. */
import type { UpstreamConfig } from '../config/types.js';
import { UpstreamClient, type UpstreamClientOptions } from './client.js';

/**
 * A client for `upstream` (base URL, key, deadline, concurrency, retries, reply cap, the CA read with the
 * config). `extra` adds what the caller owns: the request observer, a test dispatcher, retry delays.
 */
export function clientFromConfig(upstream: UpstreamConfig, extra: Partial<UpstreamClientOptions> = {}): UpstreamClient {
  return new UpstreamClient({
    baseUrl: upstream.baseUrl,
    apiKey: upstream.apiKey,
    timeoutMs: upstream.timeoutMs,
    concurrency: upstream.concurrency,
    maxRequestsPerSecond: upstream.maxRequestsPerSecond,
    retries: upstream.retries,
    maxResponseBytes: upstream.maxResponseBytes,
    ...(upstream.ca ? { ca: upstream.ca } : {}),
    ...extra,
  });
}
