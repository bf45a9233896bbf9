/**
 * The API's 2-minute rule for firewall state (contract §3, §8): a change inside the window is refused
 * with an error reply. The CLI says when the next change is possible and, with `--wait`, waits until then
 * and retries once. Clock and sleep are injected so tests never wait two minutes.
 */
import { ApiError } from '../../errors.js';
import { CliExit, EXIT } from './exit.js';

/** The window of contract §8, in milliseconds. */
export const FIREWALL_STATE_WINDOW_MS = 2 * 60 * 1000;

/** The API's refusal inside the window ("already updated in the last 2 minutes"). */
export function isWindowRefusal(error: unknown): error is ApiError {
  return error instanceof ApiError && /last 2 minutes|2 minutes/i.test(error.apiMessage);
}

export interface WindowOptions {
  /** `--wait`: wait for the window to pass and send once more */
  wait: boolean;
  /** ms since epoch */
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** ms since epoch of the last change the journal knows of, if any (then the next time is exact) */
  lastChange?: number | undefined;
  /** told before waiting (stderr) */
  notify: (line: string) => void;
}

/** When the next change is possible: exact with a known last change, else an upper bound from now. */
export function nextChangeAt(now: number, lastChange?: number): { at: number; exact: boolean } {
  if (lastChange !== undefined && lastChange + FIREWALL_STATE_WINDOW_MS > now)
    return { at: lastChange + FIREWALL_STATE_WINDOW_MS, exact: true };
  return { at: now + FIREWALL_STATE_WINDOW_MS, exact: false };
}

/**
 * Runs `send`; on the window refusal either throws CliExit (exit 1) saying when the next change is possible,
 * or (with `wait`) sleeps until then and runs `send` once more, whose outcome is final.
 */
export async function withFirewallWindow<T>(send: () => Promise<T>, options: WindowOptions): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (!isWindowRefusal(error)) throw error;
    const now = options.now();
    const next = nextChangeAt(now, options.lastChange);
    const when = `${new Date(next.at).toISOString()}${next.exact ? '' : ' at the latest'}`;
    if (!options.wait) {
      throw new CliExit(
        EXIT.upstream,
        `${error.message} — the next change is possible at ${when} (in ${Math.ceil((next.at - now) / 1000)}s); --wait waits and retries once`,
      );
    }
    options.notify(
      `the API refuses a firewall state change within 2 minutes of the last; waiting until ${when}, then retrying once`,
    );
    await options.sleep(next.at - now);
    return send();
  }
}
