/**
 * Fencing a poll's requests (`database.share_accounts`): before each HTTP attempt a poll makes for an account,
 * it asks, synchronously and without a database round trip, whether this replica still leads the account
 * (ha/shares.ts `leads`: a lease it can still trust). If not, the attempt is not sent and the account's poll runs
 * are cancelled. A replica frozen (SIGSTOP, a paused VM) while a run was in flight wakes with the reply of its
 * last request waiting: the run goes on before any timer (the lease's watchdog, the run's deadline) fires, and
 * without this check its next request would leave under a lease another replica holds by then.
 *
 * The check sits in the request's `onSent`, which the client calls synchronously as the attempt leaves (it holds
 * its slot and its budget token), so that a request queued before the freeze is refused too; a throw there ends
 * the request unsent. Remediation has its own client calls and is not gated: every replica stays able to act.
 */
import { UpstreamCancelledError } from '../errors.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { UpstreamRequest } from '../upstream/request.js';

/** Why a request of a poll was not sent (its error's detail). */
export const NOT_LEADING = 'not sent: this replica no longer leads the account (its lease is not trusted any more)';

/**
 * `client` as the polls of one account see it: every request first asks `leads()`; when it says false the
 * request is refused with UpstreamCancelledError (nothing sent) after `onLost()` (which cancels the runs).
 * Every other member is the client's own.
 */
export function leaseGated(client: UpstreamClient, leads: () => boolean, onLost: () => void): UpstreamClient {
  const gated = (req: UpstreamRequest): UpstreamRequest => ({
    ...req,
    onSent: () => {
      if (!leads()) {
        onLost();
        throw new UpstreamCancelledError({ operation: req.operation, path: req.path }, NOT_LEADING);
      }
      req.onSent?.();
    },
  });
  // A Proxy rather than a copy: the client's getters (concurrency, budget, pausedUntil) stay live, and its
  // methods run on the client itself (its private fields). Every method called with a request first (json,
  // text, jsonFromBytes, and any added later) gets the gated request: no way to send around the gate.
  return new Proxy(client, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]) =>
        method.apply(target, isRequest(args[0]) ? [gated(args[0]), ...args.slice(1)] : args);
    },
  });
}

/** Whether a method's first argument is an upstream request (what `#send` takes). */
function isRequest(value: unknown): value is UpstreamRequest {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as UpstreamRequest).operation === 'string' &&
    typeof (value as UpstreamRequest).path === 'string'
  );
}
