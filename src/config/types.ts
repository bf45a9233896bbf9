/**
 * The normalized configuration the loader (config/load.ts) builds from the file (config/schema.ts): durations
 * in ms, the listen address split, secrets read from their files.
 */
import type { ActionName, ConfigFile, JobName, PrincipalAction, Role } from './schema.js';
import type { LabelMatcher } from './matchers.js';
import type { ServerScope } from './scope.js';

type RuleFile = ConfigFile['remediation']['rules'][number];

/** One remediation rule, normalized. */
export interface RemediationRule {
  alertname: string;
  /** extra label equality matchers */
  matchers: RuleFile['matchers'];
  action: ActionName;
  accountLabel: string;
  serverIdLabel: string;
  ipLabel: string;
  firingState: '0' | '1';
  resolvedState: '0' | '1';
  /** sensitivity set on firing, for `firewall_sensitivity` rules */
  sensitivity?: NonNullable<RuleFile['sensitivity']>;
  /** delay before the resolved state is applied, ms */
  holdMs: number;
  /** minimum time between two executions on one target, ms */
  cooldownMs: number;
  /** the IP must belong to the server (its record or its firewall history) */
  requireOwnedIp: boolean;
  /** its requests wait for an operator's approval */
  requireApproval: boolean;
  /** an executed action's alert must resolve within this long, ms (remediation/verify.ts); absent: not verified */
  verifyWithinMs?: number;
  /**
   * An escalation ladder (remediation/ladder.ts): its steps in order; `action`, `verifyWithinMs`,
   * `requireApproval` and `cooldownMs` above are the first step's. Absent: one action.
   */
  steps?: LadderStep[];
}

/** One step of an escalation ladder, normalized (durations in ms). */
export interface LadderStep {
  action: ActionName;
  verifyWithinMs: number;
  requireApproval: boolean;
  cooldownMs: number;
}

/** One account's upstream block, normalized: what `clientFromConfig` builds a client from. */
export interface UpstreamConfig {
  baseUrl: string;
  /** the secret key (per the API contract, §5); never logged */
  apiKey: string;
  caFile?: string;
  /** the PEM text of `caFile`, read when the config was loaded */
  ca?: string;
  timeoutMs: number;
  concurrency: ConfigFile['upstream']['concurrency'];
  retries: ConfigFile['upstream']['retries'];
  maxResponseBytes: ConfigFile['upstream']['max_response_bytes'];
  /** the request budget, HTTP attempts per second */
  maxRequestsPerSecond: number;
  /** where the key came from: `env`, `file` (api_key_file) or `yaml` (discouraged) */
  apiKeySource: 'env' | 'file' | 'yaml';
  /** with `apiKeySource` `file`: the file, re-read by a reload and when it changes (daemon/api-key-files.ts) */
  apiKeyFile?: string;
}

/** One account: its name (the `account` label), its upstream and its services. */
export interface AccountConfig {
  name: string;
  upstream: UpstreamConfig;
  services: { colocationIds: string[]; transitIds: string[] };
  /** the servers in scope: the top level's selectors and the account's (config/scope.ts) */
  scope: ServerScope;
}

/** `web.auth_limits`: what one client address may spend of the basic-auth checks (http/auth-allowance.ts). */
export interface AuthLimits {
  /** checks waiting or running at once */
  inFlightPerAddress: number;
  /** wrong passwords sent at once before its checks are refused */
  wrongPasswordBurst: number;
  /** one wrong-password allowance comes back this often, ms */
  wrongPasswordRefillMs: number;
}

/**
 * The validated, normalized configuration the composition root (daemon/start.ts) builds the daemon from: what the
 * file says (see the schema's descriptions) with durations in ms, the listen address split, and secrets read
 * from their files.
 */
export interface Config {
  /** at least one; the single-account form gives one named `default` */
  accounts: AccountConfig[];
  web: {
    host: string;
    port: number;
    tls?: { certFile: string; keyFile: string };
    /** further addresses to listen on (a repeated `--web.listen-address`), served like host:port */
    additional?: Array<{ host: string; port: number }>;
    /** credentials for /metrics, /graphs and the status page; none configured = open */
    auth: Credentials;
    /** each client address's share of the basic-auth checks (web.auth_limits), on every route */
    authLimits: AuthLimits;
  };
  stateDir: string;
  /**
   * Where the remediation state lives: SQLite under `state_dir` (one process), or PostgreSQL shared by
   * replicas, which then elect one leader to poll (or, with `shares`, one per account). `url` carries the password: never log it (`redactedUrl`).
   */
  database:
    | { kind: 'sqlite' }
    | {
        kind: 'postgres';
        url: string;
        redactedUrl: string;
        /** `share_accounts`: the accounts shared out among the replicas, under this replica's name */
        shares?: { replica: string };
      };
  logLevel: ConfigFile['log_level'];
  schedules: Record<JobName, string>;
  graphs: { types: ConfigFile['graphs']['types']; scales: ConfigFile['graphs']['scales']; maxWidth: number };
  firewall: { maxIpsPerService: number; ipRetentionMs: number };
  /** the polls switched on (`collectors.*`); a switched-off poll makes no request and its series are absent */
  collectors: { firewall: boolean; graphs: boolean; catalog: boolean };
  remediation: Credentials & {
    /**
     * who may call the remediation endpoints; `bearerTokens`/`basicAuthUsers` (the deprecated form) are each a
     * principal with every role besides these (http/principals.ts)
     */
    principals: Principal[];
    dryRun: boolean;
    journalRetentionMs: number;
    /** desired firewall state of a server gone from the list, or of an IP its server no longer owns, is retired after this long, ms */
    retireAfterMs: number;
    /** a request awaiting approval expires after this long, ms */
    approvalTimeoutMs: number;
    budgetPerHour: number;
    safety: RemediationSafety;
    /** alerts one webhook delivery may carry at most */
    maxAlerts: number;
    /** Alertmanager's API (config/alertmanager.ts); absent: never called */
    alertmanager?: AlertmanagerConfig;
    rules: RemediationRule[];
  };
}

/** `remediation.alertmanager`, normalized: durations in ms, secret and PEM files read (never logged). */
export interface AlertmanagerConfig {
  /** without a trailing slash */
  url: string;
  timeoutMs: number;
  /**
   * how often Prometheus sends a firing alert again, ms (`resend_interval`, default a minute): an Alertmanager up
   * for less is no evidence of a resolution (remediation/episode.ts)
   */
  resendIntervalMs?: number;
  maxResponseBytes: number;
  /** silence the alert a request handles while it awaits approval or is verifying (remediation/silences.ts) */
  silenceWhileHandled: boolean;
  /** the Authorization header's scheme and credentials */
  authorization?: { type: string; credentials: string };
  basicAuth?: { username: string; password: string };
  tls: { ca?: string; cert?: string; key?: string; serverName?: string; insecureSkipVerify: boolean };
}

/** `remediation.safety`, normalized (durations in ms). */
export interface RemediationSafety {
  denyPowerWhenAttacked: boolean;
  /** ms */
  attackWindowMs: number;
  circuitBreaker: { windowMs: number; maxServers: number; maxFraction: number };
  maxPowerActionsPerServer: number;
  /** ms */
  capWindowMs: number;
  /** the outage gate: Alertmanager matchers; empty: none (remediation/outage-gate.ts) */
  blockWhileFiring: LabelMatcher[];
}

/** `remediation.safety` with every default (tests and `remediation test` start from it). */
export const DEFAULT_SAFETY: RemediationSafety = {
  denyPowerWhenAttacked: true,
  attackWindowMs: 15 * 60_000,
  circuitBreaker: { windowMs: 15 * 60_000, maxServers: 3, maxFraction: 0.01 },
  maxPowerActionsPerServer: 3,
  capWindowMs: 24 * 3_600_000,
  blockWhileFiring: [],
};

/**
 * Distinct servers an account may have power actions for within the breaker's window (the circuit breaker
 * opens above it, remediation/guards.ts `checkCircuit`): max(`max_servers`, ⌈`max_fraction` × in scope⌉).
 */
export function breakerLimit(safety: RemediationSafety, serversInScope: number): number {
  const { maxServers, maxFraction } = safety.circuitBreaker;
  return Math.max(maxServers, Math.ceil(maxFraction * serversInScope));
}

/** `web.auth_limits` with every default (as the schema has them; a config test checks they agree). */
export const DEFAULT_AUTH_LIMITS: AuthLimits = {
  inFlightPerAddress: 2,
  wrongPasswordBurst: 10,
  wrongPasswordRefillMs: 2_000,
};

/** A credentials block with its token files read: bearer tokens (never logged) and user → bcrypt hash. */
export interface Credentials {
  bearerTokens: string[];
  basicAuthUsers: Record<string, string>;
}

/** A remediation principal, normalized: its token file read (never logged). */
export interface Principal {
  name: string;
  /** exactly one of `bearerToken` and `basicAuthHash` */
  bearerToken?: string;
  /** bcrypt hash; the basic-auth user name is `name` */
  basicAuthHash?: string;
  roles: Role[];
  /** an operator may act on these accounts only; absent: all */
  accounts?: string[];
  /** an operator may ask for these actions only; absent: all */
  actions?: PrincipalAction[];
  /** its operator actions wait for another operator's approval */
  requireApproval?: boolean;
}
