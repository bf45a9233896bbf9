/**
 * `--dry-run` and validation share one path with the real call: the command runs its upstream function
 * against a client that captures the request instead of sending it. The request printed is exactly the one
 * that would be sent (the same validation, the same body), and a validation failure surfaces before any
 * confirmation or request.
 */
import { type ReplyDecoder, UpstreamClient } from '../../upstream/client.js';
import type { UpstreamRequest } from '../../upstream/request.js';

/** Thrown by DryRunClient instead of sending: carries the request. */
export class CapturedRequest extends Error {
  constructor(readonly request: UpstreamRequest) {
    super(`captured ${request.operation}`);
  }
}

/** An UpstreamClient that never sends: every call throws CapturedRequest. The key is not given to it. */
export class DryRunClient extends UpstreamClient {
  constructor(baseUrl: string) {
    super({ baseUrl, apiKey: '', timeoutMs: 1, concurrency: 1, retries: 0 });
  }
  override async json(req: UpstreamRequest, _decode?: ReplyDecoder<unknown>): Promise<never> {
    throw new CapturedRequest(req);
  }
  override async text(req: UpstreamRequest): Promise<never> {
    throw new CapturedRequest(req);
  }
}

/** What a write would send: operation, path and the form parameters (never the key). */
export interface PlannedRequest {
  operation: string;
  path: string;
  params: Record<string, string>;
}

/** Runs `call` against a DryRunClient and returns the request it would send; validation errors propagate. */
export async function plan(
  baseUrl: string,
  call: (client: UpstreamClient) => Promise<unknown>,
): Promise<PlannedRequest> {
  const client = new DryRunClient(baseUrl);
  try {
    await call(client);
  } catch (error) {
    if (!(error instanceof CapturedRequest)) throw error;
    const params: Record<string, string> = {};
    for (const [k, v] of Object.entries(error.request.body)) if (v !== undefined) params[k] = v;
    return { operation: error.request.operation, path: error.request.path, params };
  } finally {
    await client.close();
  }
  throw new Error('the command sent no request');
}
