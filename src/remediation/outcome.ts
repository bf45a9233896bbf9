/**
 * What an upstream write's failure means for its journal row, how long a failed firewall change waits
 * before its next attempt, and the digest that ties a delivery key to the request that claimed it.
 */
import { createHash } from 'node:crypto';
import { InvalidParameterError, UpstreamError } from '../errors.js';
import type { ActionRequest } from './types.js';

/**
 * `unknown` when the write may have reached the API and been acted on although no reply says so (a
 * timeout, a connection lost after sending, an unexpected exception), else `failed` (the API said no,
 * or the request provably never left). The client decides which transport failures leave the outcome
 * open (`UpstreamError.outcomeUnknown`); this adds only the cases outside the client.
 */
export function failureDecision(error: unknown): 'failed' | 'unknown' {
  if (error instanceof InvalidParameterError) return 'failed';
  if (!(error instanceof UpstreamError)) return 'unknown';
  return error.outcomeUnknown ? 'unknown' : 'failed';
}

/** The journal's `upstream_outcome` for a failure: the error's stable code. */
export const failureOutcome = (error: unknown): string => (error instanceof UpstreamError ? error.code : 'error');

/** Longest wait between two attempts of a failing firewall change, ms. */
export const MAX_RETRY_MS = 30 * 60_000;

/**
 * Wait before attempt `attempts + 1` of a firewall change that failed `attempts` times: the IP's window
 * (2 minutes, contract §8) doubled per failure, at most MAX_RETRY_MS. Never inside the window, so an
 * `unknown` change that did apply is not refused, and re-sending the same state is harmless.
 */
export function retryDelay(attempts: number, windowMs: number): number {
  return Math.min(MAX_RETRY_MS, Math.max(windowMs, 60_000) * 2 ** Math.max(0, attempts - 1));
}

/** Digest of what a request asks for (action, target, value): a delivery key reused for another is refused. */
export function requestDigest(req: Pick<ActionRequest, 'action' | 'serverId' | 'ip' | 'value'>): string {
  return createHash('sha256')
    .update(JSON.stringify([req.action, req.serverId, req.ip ?? null, req.value ?? null]))
    .digest('hex');
}
