/**
 * What `check-config` warns about in a valid config (exit 0, printed): set-ups that load and run but leave a
 * power action or a request with no safety net. Each warning names the key to look at, as the problems do.
 */
import { ACTIONS, POWER_ACTIONS } from './actions.js';
import type { Config, Principal } from './types.js';

/** The risky set-ups of `config`, one line each (without the `warning: ` in front). */
export function configWarnings(config: Config): string[] {
  return [...armedWithoutAttackGuard(config), ...approvalsNobodyCanGive(config)];
}

/**
 * Power rules armed (`dry_run: false`) with `deny_power_when_attacked: false`: an alert an attack causes (a
 * server unreachable while its IP is flooded) power-cycles the server, which fixes nothing.
 */
function armedWithoutAttackGuard(config: Config): string[] {
  const { remediation } = config;
  if (remediation.dryRun || remediation.safety.denyPowerWhenAttacked) return [];
  const rules = remediation.rules.flatMap((rule, i) => (POWER_ACTIONS.has(rule.action) ? [`rules[${i}]`] : []));
  if (rules.length === 0) return [];
  return [
    `remediation.safety.deny_power_when_attacked: false while power rules act (dry_run false: ${rules.join(', ')}): ` +
      'a server whose IP is under attack is power-cycled on the alert the attack causes',
  ];
}

/**
 * A principal with `require_approval` whose requests no other operator may approve (approval: another
 * operator principal whose accounts and actions cover the request; the deprecated shared credentials are
 * operators of everything): its requests can only expire.
 */
function approvalsNobodyCanGive(config: Config): string[] {
  const { principals, bearerTokens, basicAuthUsers } = config.remediation;
  // The deprecated form's credentials have every role on every account (http/principals.ts).
  if (bearerTokens.length > 0 || Object.keys(basicAuthUsers).length > 0) return [];
  const accounts = config.accounts.map((a) => a.name);
  const operators = principals.filter((p) => p.roles.includes('operator'));
  const covers = (p: Principal, account: string, action: string) =>
    (p.accounts ?? accounts).includes(account) && (p.actions ?? ACTIONS).includes(action as never);
  return principals.flatMap((p, i) => {
    if (!p.requireApproval || !p.roles.includes('operator')) return [];
    const unapprovable = (p.accounts ?? accounts).flatMap((account) =>
      (p.actions ?? ACTIONS)
        .filter((action) => (ACTIONS as readonly string[]).includes(action))
        .filter((action) => !operators.some((q) => q.name !== p.name && covers(q, account, action)))
        .map((action) => (accounts.length > 1 ? `${action} on account ${account}` : action)),
    );
    if (unapprovable.length === 0) return [];
    return [
      `remediation.auth.principals[${i}] (${p.name}): require_approval, and no other operator principal may approve ` +
        `its ${unapprovable.join(', ')}: such a request can only expire`,
    ];
  });
}
