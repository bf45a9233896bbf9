/**
 * `baremetal-exporter remediation test FILE…` and `remediation replay --config.file NEW.yml [--since 7d]`: the
 * remediation rules tested before they act, and recorded deliveries decided again under new rules.
 */
import { BaremetalError } from '../errors.js';

/** Runs a `remediation` subcommand; returns the exit code. Throws BaremetalError (exit 2) for a wrong one. */
export async function runRemediation(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'test':
      return (await import('./remediation-test.js')).runRemediationTest(rest);
    case 'replay':
      return (await import('./remediation-replay.js')).runRemediationReplay(rest);
    default:
      throw new BaremetalError(
        `remediation: expected a subcommand: test FILE… or replay --config.file NEW.yml [--since 7d] (got ${sub === undefined ? 'nothing' : JSON.stringify(sub)})`,
      );
  }
}
