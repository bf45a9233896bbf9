/** `baremetal-exporter remediation test FILE…`: the remediation rules tested before they act. */
import { BaremetalError } from '../errors.js';

/** Runs a `remediation` subcommand; returns the exit code. Throws BaremetalError (exit 2) for a wrong one. */
export async function runRemediation(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'test':
      return (await import('./remediation-test.js')).runRemediationTest(rest);
    default:
      throw new BaremetalError(
        `remediation: expected a subcommand: test FILE… (got ${sub === undefined ? 'nothing' : JSON.stringify(sub)})`,
      );
  }
}
