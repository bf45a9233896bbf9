/**
 * What `check-config` warns about in a valid config (exit 0, printed): set-ups that load and run but leave a
 * power action or a request with no safety net. Each warning names the key to look at, as the problems do.
 */
import { ACTIONS, POWER_ACTIONS } from './actions.js';
import { breakerLimit, type Config, type Principal } from './types.js';

/** The risky set-ups of `config`, one line each (without the `warning: ` in front). */
export function configWarnings(config: Config): string[] {
  return [...armedWithoutAttackGuard(config), ...approvalsNobodyCanGive(config), ...breakerBeyondScope(config)];
}

/**
 * A circuit breaker that can never open: it opens when a request would make more distinct servers with power
 * requests in its window than its limit (`breakerLimit`: max(`max_servers`, ⌈`max_fraction` × servers in
 * scope⌉)), and only servers in scope are remediation targets (the target guard refuses the others first): a
 * limit at or above the number of servers in scope is never exceeded. That number is known from the config
 * alone when an account's `servers.include` names servers by `id` only (a location or hostname selector matches
 * an unknown number): the ids, less those excluded by id, are the most it can hold. `max_fraction: 1` is the
 * whole scope, whatever it holds.
 */
function breakerBeyondScope(config: Config): string[] {
  const { safety } = config.remediation;
  if (safety.circuitBreaker.maxFraction >= 1)
    return [
      'remediation.safety.circuit_breaker.max_fraction: 1 allows every server in scope per window: the breaker can never open',
    ];
  return config.accounts.flatMap((account) => {
    const { include, exclude } = account.scope;
    if (include.length === 0 || !include.every((s) => 'id' in s)) return [];
    const excluded = new Set(exclude.flatMap((s) => ('id' in s ? [s.id] : [])));
    const ids = new Set(include.flatMap((s) => ('id' in s && !excluded.has(s.id) ? [s.id] : [])));
    const limit = breakerLimit(safety, ids.size);
    if (limit < ids.size) return [];
    const { maxServers, maxFraction } = safety.circuitBreaker;
    const whose = config.accounts.length > 1 ? `account ${account.name}'s` : 'the';
    return [
      `remediation.safety.circuit_breaker: max_servers ${maxServers} (max_fraction ${maxFraction}) allows ${limit} ` +
        `servers per window, and ${whose} scope holds at most ${ids.size} (servers.include names them by id): ` +
        'the breaker can never open',
    ];
  });
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
