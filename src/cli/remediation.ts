/**
 * `baremetal-exporter remediation test FILE…` and `remediation replay --config.file NEW.yml [--since 7d] [-o json] [--exit-code]`: the
 * remediation rules tested before they act, and recorded deliveries decided again under new rules.
 */
import { BaremetalError } from '../errors.js';
import { asksHelp } from './commands.js';

/** `remediation test --help`. */
export const REMEDIATION_TEST_HELP = `Usage: baremetal-exporter remediation test FILE…

Runs each remediation test file (a remediation block or config_file, a world of servers and attacks, a
timeline of alert deliveries and operator steps with the journal rows each must produce) through the real
rules, engine and guards, offline: nothing is sent, nothing is written. See docs/remediation.md.

Exit 0 when every file passes, 1 with a diff when one does not, 2 when one is missing or malformed.
`;

/** `remediation replay --help`. */
export const REMEDIATION_REPLAY_HELP = `Usage: baremetal-exporter remediation replay --config.file NEW.yml [--since 7d] [-o json] [--exit-code]

Plays again the history the state store recorded within --since (default 7d) under NEW.yml's remediation
block, offline (no API call, no journal write): each alert delivery decided again, the approvals, denials and
withdrawals of requests that awaited approval applied again, the operator's rows and the breaker as recorded.
Prints each delivery's outcome then and now, and flags a person's decision the new rules would overturn.

  --config.file FILE (alias --config)   the configuration whose remediation block is replayed
  --since DURATION                      how far back to read the recorded history (default 7d)
  -o, --output table|json|yaml          lines for people (default), or one JSON or YAML document
  --exit-code                           exit 1 when any decision changed or is overturned (as git diff --exit-code)
`;

/** `remediation --help`: both subcommands. */
export const REMEDIATION_HELP = `Usage: baremetal-exporter remediation test FILE… | replay --config.file NEW.yml [--since 7d] [-o json]

  test FILE…        run remediation rule tests offline (remediation test --help)
  replay …          the recorded history decided again under new rules (remediation replay --help)
`;

const isHelp = asksHelp;

/** Runs a `remediation` subcommand; returns the exit code. Throws BaremetalError (exit 2) for a wrong one. */
export async function runRemediation(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case '--help':
    case '-h':
    case 'help':
      return help(out, REMEDIATION_HELP);
    case 'test':
      if (isHelp(rest)) return help(out, REMEDIATION_TEST_HELP);
      return (await import('./remediation-test.js')).runRemediationTest(rest);
    case 'replay':
      if (isHelp(rest)) return help(out, REMEDIATION_REPLAY_HELP);
      return (await import('./remediation-replay.js')).runRemediationReplay(rest);
    default:
      throw new BaremetalError(
        `remediation: expected a subcommand: test FILE… or replay --config.file NEW.yml [--since 7d] (got ${sub === undefined ? 'nothing' : JSON.stringify(sub)})`,
      );
  }
}

function help(out: NodeJS.WritableStream, text: string): number {
  out.write(text);
  return 0;
}
