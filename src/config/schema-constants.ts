/**
 * The configuration's constants: the limits, names and defaults the schema (config/config-file.schema.ts) is
 * built from and the daemon reads. Apart from config/schema.ts, which re-exports them beside the generated
 * schema, so that the schema's declaration imports nothing that imports it.
 */
/**
 * The longest `remediation.approval_timeout`: a request older than a week is no longer the situation it was
 * asked in (and its alert is silenced while it awaits).
 */
export const MAX_APPROVAL_TIMEOUT = '7d';
/**
 * The longest `verify_within` (a rule's or a ladder step's): the alert is silenced until the deadline, and a
 * verification that takes longer than a day says nothing about the action.
 */
export const MAX_VERIFY_WITHIN = '1d';

/**
 * Each poll's `schedules` key: its default (node-cron, six fields: seconds first) and the cron's description.
 * One entry per poll of src/polls/index.ts `POLLS` (config is the lowest layer: it cannot read the polls, so a
 * poll's config key is declared here, and a compile-time check there ties both lists). `firewall_under_attack`
 * is not here: it has no default of its own (`schedules.firewall`'s) and exists as a job only when it differs.
 */
export const POLL_SCHEDULES = {
  servers: { default: '0 */5 * * * *', description: 'cron (seconds field allowed) of the server-list poll' },
  firewall: {
    default: '30 * * * * *',
    description: 'cron of the hour-scale firewall history of every server, colocation and transit service',
  },
  graphs: { default: '15 */5 * * * *', description: 'cron of the graph images of every server' },
  catalog: { default: '45 7 */6 * * *', description: 'cron of the OS list and locations' },
} as const;

/** Default schedules (node-cron, six fields: seconds first). */
export const DEFAULT_SCHEDULES = Object.fromEntries(
  Object.entries(POLL_SCHEDULES).map(([job, { default: schedule }]) => [job, schedule]),
) as { readonly [K in keyof typeof POLL_SCHEDULES]: (typeof POLL_SCHEDULES)[K]['default'] };

/**
 * Poll jobs, each with its own schedule. `firewall_under_attack` polls the services whose latest history had
 * events; its schedule defaults to `schedules.firewall`'s.
 */
export type JobName = keyof typeof POLL_SCHEDULES | 'firewall_under_attack';
/**
 * Whether `firewall_under_attack` is a poll job apart from `firewall`: its schedule differs. The one home of
 * that rule: the poll's `enabled`, the account state's split of services, the firewall run's capacity and
 * the reload (a change of it adds or removes a job: a restart) all ask it.
 */
export const underAttackPollApart = (schedules: Readonly<Record<JobName, string>>): boolean =>
  schedules.firewall_under_attack !== schedules.firewall;

export const JOB_NAMES: readonly JobName[] = [
  ...(Object.keys(POLL_SCHEDULES) as (keyof typeof POLL_SCHEDULES)[]),
  'firewall_under_attack',
];

/** Default of `upstream.max_requests_per_second`. */
export const DEFAULT_MAX_REQUESTS_PER_SECOND = 10;

/** The remediation actions: one table, config/actions.ts. */
export { ACTIONS, type ActionName, DEFAULT_COOLDOWN_MS } from './actions.js';
import { ACTIONS } from './actions.js';

/**
 * What a remediation principal may call (docs/remediation.md, "Who may do what"): `webhook` the Alertmanager
 * receiver (`POST /api/v1/alertmanager`, which acts only as the rules say), `operator` the action endpoints
 * and the console download (and everything a reader may), `reader` the journal (`GET /api/v1/actions`), the
 * breakers' state and, behind web.auth, the status page's details.
 */
export const ROLES = ['webhook', 'operator', 'reader'] as const;
export type Role = (typeof ROLES)[number];

/** A principal's name: the basic-auth user name, the journal's `principal`; no `:` (`cli:` names the CLI's). */
export const PRINCIPAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** What an operator principal's `actions` may list: the actions, and `console` (the KVM/IPMI download). */
export const PRINCIPAL_ACTIONS = [...ACTIONS, 'console'] as const;
export type PrincipalAction = (typeof PRINCIPAL_ACTIONS)[number];

/** `hold`'s format: a duration, or "0"/"0s" for none (config/formats.ts). */
export const HOLD_FORMAT = { example: '5m', zero: true } as const;

/** An account's name: the value of the `account` label, a graph URL segment and a directory name. */
export const ACCOUNT_NAME = /^[a-z0-9_-]{1,32}$/;

/** The account the single-account form (`upstream:` + `services:`) configures. */
export const DEFAULT_ACCOUNT = 'default';

/** The schema keywords this file adds as annotations (see the file comment); Ajv is told they exist. */
export const SCHEMA_ANNOTATIONS = ['unit', 'reloadable'];

/**
 * The most alerts `remediation.max_alerts` may allow in one webhook delivery: what fits the 1 MiB body limit
 * with the smallest alert (about 100 bytes).
 */
export const MAX_WEBHOOK_ALERTS = 10_000;
