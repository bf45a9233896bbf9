/**
 * The configuration, defined once: the YAML file's schema with every key's default, unit and description
 * (TypeBox, i.e. JSON Schema) and the file's type derived from it (`ConfigFile`); the normalized `Config` the
 * loader builds from it (durations in ms, secrets read from their files) is in config/types.ts.
 * docs/configuration.md is generated from this schema (`npm run docs`, scripts/docs.ts) and a test fails when
 * it drifts.
 *
 * Four format keywords, checked by Ajv like JSON Schema's own (config/formats.ts): `duration`, `cron`,
 * `listenAddress` and `bcrypt`. Two annotations besides JSON Schema's own (Ajv knows them as
 * `SCHEMA_ANNOTATIONS`; they validate nothing): `unit` (what a number or string counts: `duration`, `bytes`,
 * `cron`, …) and `reloadable: true` (a configuration reload applies the key, and every key under it, while the
 * daemon runs; config/reload.ts).
 *
 * A key with a default is listed as required: Ajv fills defaults before it checks `required`, so it is never
 * missing, and the derived type says the value is always there.
 */
import ms from 'ms';
import { Type, type Static } from 'typebox';
import { oneOf, stringMap, strictObject as strict } from '../json-schema.js';
import { alertmanagerSchema, blockWhileFiringSchema } from './alertmanager-schema.js';
import { GRAPH_SCALES, GRAPH_TYPES, SENSITIVITIES } from './api-terms.js';

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
const POLL_SCHEDULES = {
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

/** The schema's `schedules` key of each poll of POLL_SCHEDULES. */
const scheduleKeys = () =>
  Object.fromEntries(
    Object.entries(POLL_SCHEDULES).map(([job, key]) => [
      job,
      Type.String({ default: key.default, unit: 'cron', cron: true, description: key.description }),
    ]),
  ) as { [K in keyof typeof POLL_SCHEDULES]: ReturnType<typeof Type.String> };

/** Default of `upstream.max_requests_per_second`. */
export const DEFAULT_MAX_REQUESTS_PER_SECOND = 10;

/** The remediation actions: one table, config/actions.ts. */
export { ACTIONS, type ActionName, DEFAULT_COOLDOWN_MS } from './actions.js';
import { ACTIONS, DEFAULT_COOLDOWN_MS } from './actions.js';

/** User → bcrypt hash: each hash checked by the `bcrypt` keyword (config/formats.ts), naming its user. */
const bcryptHashes = (options: { default: Record<string, string>; description: string }) =>
  Type.Unsafe<Record<string, string>>({
    type: 'object',
    additionalProperties: { type: 'string', bcrypt: 'key' },
    ...options,
  });

const path = (description: string) => Type.String({ minLength: 1, description });
const STATES = ['0', '1', 0, 1] as const;

/** Credentials as Alertmanager's http_config and Prometheus's scrape config send them (web.auth, remediation.auth). */
const credentials = (what: string) =>
  strict(
    {
      bearer_token_files: Type.Array(Type.String({ minLength: 1 }), {
        default: [],
        description: `files each holding one bearer token (at least 16 characters) accepted for ${what}`,
      }),
      basic_auth_users: bcryptHashes({
        default: {},
        description: `user → bcrypt hash (\`$2b$…\`, never a password) accepted for ${what}`,
      }),
    },
    { default: {} },
  );

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

/** One entry of `remediation.auth.principals`. */
const principalSchema = strict({
  name: Type.String({
    pattern: PRINCIPAL_NAME.source,
    description: 'unique name, `[A-Za-z0-9][A-Za-z0-9._@-]{0,63}`: the basic-auth user and the journal’s `principal`',
  }),
  bearer_token_file: Type.Optional(path('a file holding its bearer token (at least 16 characters)')),
  basic_auth_hash: Type.Optional(
    Type.String({
      minLength: 1,
      bcrypt: 'name',
      description: 'bcrypt hash (`$2b$…`) of its basic-auth password; user name = `name`',
    }),
  ),
  roles: Type.Array(oneOf(ROLES), {
    minItems: 1,
    uniqueItems: true,
    description: `what it may call: ${ROLES.join(', ')} (see [Remediation](remediation.md#who-may-do-what))`,
  }),
  accounts: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      uniqueItems: true,
      description:
        "the accounts it may act on and read (the journal, the breakers, the status page's details; default: all)",
    }),
  ),
  actions: Type.Optional(
    Type.Array(oneOf(PRINCIPAL_ACTIONS), {
      minItems: 1,
      uniqueItems: true,
      description: `the actions an operator may ask for (default: all): ${PRINCIPAL_ACTIONS.join(', ')}`,
    }),
  ),
  require_approval: Type.Boolean({
    default: false,
    description: 'its operator actions wait for another operator to approve them (`POST /api/v1/actions/{id}/approve`)',
  }),
});

/** `remediation.auth`: principals with roles, and the deprecated shared credentials. */
const remediationAuth = () =>
  strict(
    {
      principals: Type.Array(principalSchema, {
        default: [],
        maxItems: 1000,
        description:
          'who may call the remediation endpoints: each with `name`, one of `bearer_token_file` or `basic_auth_hash`, `roles`, and optionally `accounts` and `actions`',
      }),
      bearer_token_files: Type.Array(Type.String({ minLength: 1 }), {
        default: [],
        description:
          'deprecated (use `principals`): files each holding one bearer token, each a principal `token-N` with every role',
      }),
      basic_auth_users: bcryptHashes({
        default: {},
        description: 'deprecated (use `principals`): user → bcrypt hash, each user a principal with every role',
      }),
    },
    { default: {} },
  );

/** One remediation rule of the file. */
/** `hold`'s format: a duration, or "0"/"0s" for none (config/formats.ts). */
export const HOLD_FORMAT = { example: '5m', zero: true } as const;

export const ruleSchema = strict({
  alertname: Type.String({ minLength: 1, description: 'the alert this rule acts on' }),
  matchers: stringMap({ default: {}, description: 'extra label equalities the alert must have' }),
  action: Type.Optional(
    oneOf(ACTIONS, { description: `what to do: ${ACTIONS.join(', ')}; exactly one of \`action\` and \`steps\`` }),
  ),
  steps: Type.Optional(
    Type.Array(
      strict({
        action: oneOf(['powercycle', 'poweron', 'poweroff'] as const, { description: 'the power action of this step' }),
        verify_within: Type.String({
          unit: 'duration',
          duration: { example: '10m', max: MAX_VERIFY_WITHIN },
          description: `duration after the call within which the alert must resolve, else the next step runs; at most ${MAX_VERIFY_WITHIN}`,
        }),
        require_approval: Type.Boolean({
          default: false,
          description: 'this step waits for an operator to approve it',
        }),
        cooldown: Type.Optional(
          Type.String({
            unit: 'duration',
            duration: '10m',
            description:
              "duration since the last power action on the server this step allows; default the rule's cooldown for the first step, the previous step's verify_within for the others",
          }),
        ),
      }),
      {
        minItems: 2,
        maxItems: 10,
        description:
          'an escalation ladder of power actions instead of one `action`: an `ineffective` step starts the next as a new request through every guard; after the last the episode is `escalated`',
      },
    ),
  ),
  account_label: Type.String({
    minLength: 1,
    default: 'account',
    description: 'label carrying the account (optional on the alert when one account is configured)',
  }),
  server_id_label: Type.String({ minLength: 1, default: 'server_id', description: 'label carrying the server id' }),
  ip_label: Type.String({ minLength: 1, default: 'ip', description: 'label carrying the IP (firewall actions)' }),
  firing_state: oneOf(STATES, { default: '1', description: 'firewall state set on firing (1 = Always On)' }),
  resolved_state: oneOf(STATES, {
    default: '0',
    description: 'firewall state set on resolved (0 = Redirect On Attack)',
  }),
  sensitivity: Type.Optional(
    oneOf(SENSITIVITIES, {
      description: `sensitivity set on firing, required for firewall_sensitivity: ${SENSITIVITIES.join(', ')}`,
    }),
  ),
  hold: Type.String({
    default: '0s',
    unit: 'duration',
    duration: HOLD_FORMAT,
    description: 'duration to wait after resolved before switching back',
  }),
  cooldown: Type.Optional(
    Type.String({
      unit: 'duration',
      duration: '30m',
      description: `duration between two executions on one target; default ${ms(DEFAULT_COOLDOWN_MS.powercycle)} for power actions, ${ms(DEFAULT_COOLDOWN_MS.firewall_state)} (the API minimum) for firewall actions`,
    }),
  ),
  require_owned_ip: Type.Boolean({
    default: true,
    description: 'the IP must belong to the server (its record or its firewall history)',
  }),
  require_approval: Type.Boolean({
    default: false,
    description: 'its actions wait for an operator to approve them (`POST /api/v1/actions/{id}/approve`)',
  }),
  verify_within: Type.Optional(
    Type.String({
      unit: 'duration',
      duration: { example: '10m', max: MAX_VERIFY_WITHIN },
      description: `duration after the call within which the alert must resolve — \`verified\` — else the action was \`ineffective\`; a firewall action (on firing) is also \`verified\` when its IP had no attack event from the call to this deadline; at most ${MAX_VERIFY_WITHIN} (its alert is silenced that long); default none: not verified`,
    }),
  ),
});

/**
 * The guards of power actions (powercycle, poweron, poweroff) besides cooldown and budget: the attack data
 * must corroborate them, a circuit breaker per account limits how many servers they touch, and a cap per
 * server hands a server that needs too many to a person. See docs/remediation.md.
 */
const safetySchema = strict(
  {
    deny_power_when_attacked: Type.Boolean({
      default: true,
      description:
        'deny a power action when an IP of the server has attack events within `attack_window`, or when its attack state is unknown (firewall collector off, its history failed or older than three firewall periods)',
    }),
    attack_window: Type.String({
      default: '15m',
      unit: 'duration',
      duration: '15m',
      description: 'duration before a power request in which an attack event of the server denies it',
    }),
    circuit_breaker: strict(
      {
        window: Type.String({
          default: '15m',
          unit: 'duration',
          duration: '15m',
          description: 'duration in which the distinct servers asked for power actions are counted, per account',
        }),
        max_servers: Type.Integer({
          minimum: 1,
          maximum: 100000,
          default: 3,
          unit: 'servers',
          description: 'distinct servers per window at least allowed before the breaker opens',
        }),
        max_fraction: Type.Number({
          minimum: 0,
          maximum: 1,
          default: 0.01,
          unit: 'ratio',
          description:
            'fraction of the servers in scope allowed per window, when larger than `max_servers` (rounded up)',
        }),
      },
      { default: {}, description: 'opens (power actions denied) until an operator closes it' },
    ),
    max_power_actions_per_server: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 3,
      unit: 'actions',
      description: 'power actions per server and `cap_window`; a request beyond is `escalated` (nothing sent)',
    }),
    cap_window: Type.String({
      default: '24h',
      unit: 'duration',
      duration: '24h',
      description: 'duration over which `max_power_actions_per_server` counts',
    }),
    block_while_firing: blockWhileFiringSchema,
  },
  { default: {}, reloadable: true },
);

/**
 * The `upstream` block's keys: the single-account form's `upstream:` and every entry of `accounts:` share
 * them (one object, so a key added here appears in both).
 */
export const upstreamProperties = {
  base_url: Type.Optional(
    path(
      'API address without `/api/v1`; required (in `upstream:`, or env `BAREMETAL_API_URL`, which wins); `http://` only to a loopback host',
    ),
  ),
  api_key: Type.Optional(
    path('the secret key in the file itself (discouraged); in `upstream:`, env `BAREMETAL_API_KEY` wins'),
  ),
  api_key_file: Type.Optional(
    path(
      'a file holding the secret key (preferred); in `upstream:`, env `BAREMETAL_API_KEY` wins. Re-read by a reload and when the file changes (a Kubernetes Secret update too): the next request sends the new key',
    ),
  ),
  ca_file: Type.Optional(path('extra PEM CA certificates trusted besides the system ones')),
  timeout: Type.String({
    default: '10s',
    unit: 'duration',
    duration: '10s',
    description: 'total deadline of one attempt, headers and body together (`250ms`, `10s`, `1m`)',
  }),
  concurrency: Type.Integer({
    minimum: 1,
    maximum: 256,
    default: 16,
    unit: 'requests',
    description:
      'upstream requests in flight at once, all jobs together; graphs and catalog hold at most half of them, so that slow pictures never keep the firewall polls waiting',
  }),
  max_requests_per_second: Type.Number({
    exclusiveMinimum: 0,
    maximum: 10000,
    default: DEFAULT_MAX_REQUESTS_PER_SECOND,
    unit: 'requests/s',
    description:
      'request budget: HTTP attempts per second at most (token bucket, retries included), every poll and action together; actions go first, then the server list and firewall histories, then graphs and catalog; a firewall poll that cannot fit in its period covers its services round-robin (check-config says how often each is read)',
  }),
  retries: Type.Integer({
    minimum: 0,
    maximum: 10,
    default: 2,
    unit: 'retries',
    description: 'retries of a failed read, with exponential backoff and jitter; writes are never retried',
  }),
  max_response_bytes: Type.Integer({
    minimum: 1024,
    maximum: 1073741824,
    default: 33554432,
    unit: 'bytes',
    description:
      'largest reply body read, in bytes (32 MiB); a larger one is aborted while streaming (outcome `too_large`)',
  }),
};

/** Services the API cannot list: the single-account form's `services:` and each account's `services`. */
const servicesSchema = () =>
  strict(
    {
      colocation_ids: Type.Array(Type.String({ minLength: 1 }), {
        uniqueItems: true,
        default: [],
        description: 'colocation services whose firewall history is polled',
      }),
      transit_ids: Type.Array(Type.String({ minLength: 1 }), {
        uniqueItems: true,
        default: [],
        description: 'transit services whose firewall history is polled',
      }),
    },
    { default: {}, reloadable: true },
  );

const selector = (what: string) =>
  Type.Union(
    [
      strict({ id: Type.String({ minLength: 1, maxLength: 64, description: 'server id, exact' }) }),
      strict({ location: Type.String({ minLength: 1, maxLength: 64, description: 'location, exact' }) }),
      strict({
        hostname: Type.String({
          minLength: 1,
          maxLength: 512,
          description:
            'hostname, RE2 regular expression (`(?i)` for case-insensitive) matched against the whole hostname, in time linear in its length',
        }),
      }),
    ],
    { description: what },
  );

/**
 * Which servers are polled, exported and discovered (config/scope.ts): top level for every account, and per
 * entry of `accounts:` (added to the top level's).
 */
const serversSchema = () =>
  strict(
    {
      include: Type.Array(selector('a server selector: `{id}`, `{location}` or `{hostname: regex}`'), {
        maxItems: 1000,
        default: [],
        description:
          'server selectors (`{id: "…"}`, `{location: "…"}`, `{hostname: "<RE2 regex matching the whole hostname>"}`); when any is given, only servers matching one are in scope',
      }),
      exclude: Type.Array(selector('a server selector: `{id}`, `{location}` or `{hostname: regex}`'), {
        maxItems: 1000,
        default: [],
        description:
          'server selectors of servers out of scope: no per-server request (firewall history, graphs), no series, no discovery target, no remediation',
      }),
    },
    // A reload applies a new scope to the latest server list at once (daemon/reload.ts).
    { default: {}, reloadable: true },
  );

/** An account's name: the value of the `account` label, a graph URL segment and a directory name. */
export const ACCOUNT_NAME = /^[a-z0-9_-]{1,32}$/;

/** The account the single-account form (`upstream:` + `services:`) configures. */
export const DEFAULT_ACCOUNT = 'default';

/** One entry of `accounts:`: the `upstream` keys plus its name and services. */
export const accountSchema = strict({
  name: Type.String({
    pattern: ACCOUNT_NAME.source,
    description: "the account's name, `[a-z0-9_-]{1,32}`, unique: the value of the `account` label",
  }),
  ...upstreamProperties,
  services: servicesSchema(),
  servers: serversSchema(),
});

/** The schema keywords this file adds as annotations (see the file comment); Ajv is told they exist. */
export const SCHEMA_ANNOTATIONS = ['unit', 'reloadable'];

/**
 * The most alerts `remediation.max_alerts` may allow in one webhook delivery: what fits the 1 MiB body limit
 * with the smallest alert (about 100 bytes).
 */
export const MAX_WEBHOOK_ALERTS = 10_000;

/** JSON Schema of the YAML file. Unknown keys are errors; defaults are filled in by Ajv. */
export const configFileSchema = strict({
  upstream: strict(upstreamProperties, { default: {} }),
  accounts: Type.Optional(
    Type.Array(accountSchema, {
      minItems: 1,
      maxItems: 64,
      description:
        'several accounts (one key each) instead of `upstream` and `services`: each entry has the `upstream` keys plus `name` and `services`; env `BAREMETAL_API_*` do not apply',
    }),
  ),
  web: strict(
    {
      listen_address: Type.String({
        default: '0.0.0.0:9877',
        listenAddress: true,
        description: '`host:port` of `/metrics`, `/graphs` and the status page',
      }),
      tls: Type.Optional(
        strict({
          cert_file: path("PEM certificate of the daemon's own port; reloaded on change and SIGHUP"),
          key_file: path("PEM key of the daemon's own port; reloaded on change and SIGHUP"),
        }),
      ),
      auth: credentials(
        "`/`, `/metrics` and `/graphs` (none: open), as Prometheus's scrape credential: the status page's details stay a reader's or operator's (remediation.auth)",
      ),
      auth_limits: strict(
        {
          in_flight_per_address: Type.Integer({
            minimum: 1,
            maximum: 64,
            default: 2,
            unit: 'checks',
            description:
              'basic-auth password checks of one client address waiting or running at once; beyond, a request is refused with 503 without hashing',
          }),
          wrong_password_burst: Type.Integer({
            minimum: 1,
            maximum: 100000,
            default: 10,
            unit: 'passwords',
            description:
              'wrong basic-auth passwords one client address may send at once; beyond, its requests are refused with 429 without hashing until an allowance comes back',
          }),
          wrong_password_refill: Type.String({
            default: '2s',
            unit: 'duration',
            duration: '2s',
            description: 'duration after which one wrong-password allowance of a client address comes back',
          }),
        },
        {
          default: {},
          description:
            'the share of the bcrypt checks one client address may use, on the web and remediation routes alike; a correct password gives its allowance back',
        },
      ),
    },
    { default: {} },
  ),
  state_dir: Type.String({
    minLength: 1,
    default: './data',
    description: 'graph images and the remediation journal are kept under it across restarts',
  }),
  database: strict(
    {
      url: Type.Optional(
        Type.String({
          minLength: 1,
          description:
            'PostgreSQL URL (`postgres://user:password@host:port/db`) of the state shared by replicas (see High availability); default: SQLite under `state_dir`. Prefer `url_file` or BAREMETAL_DATABASE_URL: a password in the YAML is discouraged',
        }),
      ),
      url_file: Type.Optional(path('file holding the PostgreSQL URL (its password is never logged)')),
      share_accounts: Type.Boolean({
        default: false,
        description:
          'with PostgreSQL: share the accounts out among the live replicas, each account led by one replica under a lease with an epoch (see High availability), instead of one leader polling every account. Set it, and the accounts, the same on every replica: a replica whose setting or accounts differ from those of the oldest live replica leads nothing until they agree (see High availability, When replicas disagree)',
      }),
      replica_name: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 253,
          pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
          description:
            "this replica's name among those sharing the database (`share_accounts`), unique and stable across its restarts (a StatefulSet pod's name); a process whose name a live replica of another boot holds refuses to lead; default: the host name",
        }),
      ),
    },
    { default: {} },
  ),
  log_level: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
    description: 'pino level',
  }),
  schedules: strict(
    {
      ...scheduleKeys(),
      firewall_under_attack: Type.Optional(
        Type.String({
          unit: 'cron',
          cron: true,
          description:
            'cron of the firewall history of the services whose latest history had events; default: `schedules.firewall`. A reload that makes it start or stop differing from `schedules.firewall` needs a restart',
        }),
      ),
    },
    { default: {}, reloadable: true },
  ),
  graphs: strict(
    {
      types: Type.Array(oneOf(GRAPH_TYPES), {
        uniqueItems: true,
        default: ['port_bits'],
        description: `graph types polled, of ${GRAPH_TYPES.join(', ')}`,
      }),
      scales: Type.Array(oneOf(GRAPH_SCALES), {
        uniqueItems: true,
        default: ['day'],
        description: `graph scales polled, of ${GRAPH_SCALES.join(', ')}`,
      }),
      max_width: Type.Integer({
        minimum: 16,
        maximum: 4096,
        default: 2000,
        unit: 'pixels',
        description: 'largest `?width=` of a graph, in pixels',
      }),
    },
    { default: {} },
  ),
  services: servicesSchema(),
  servers: serversSchema(),
  collectors: strict(
    {
      firewall: Type.Boolean({
        default: true,
        description:
          'poll firewall histories (attack series); false: no history request, no firewall series, /readyz does not wait for it',
      }),
      graphs: Type.Boolean({
        default: true,
        description: 'poll graph images; false: no graph request, no graph series',
      }),
      catalog: Type.Boolean({
        default: true,
        description: 'poll the OS list and locations; false: no catalog request, no catalog series',
      }),
    },
    { default: {}, reloadable: true },
  ),
  firewall: strict(
    {
      max_ips_per_service: Type.Integer({
        minimum: 1,
        maximum: 65536,
        default: 1024,
        unit: 'IPs',
        description: 'IP series per service at most; events of further IPs count for the service but make no series',
      }),
      ip_retention: Type.String({
        default: '24h',
        unit: 'duration',
        duration: '24h',
        description: 'duration after which a colocation or transit IP with no events loses its series',
      }),
    },
    { default: {} },
  ),
  remediation: strict(
    {
      dry_run: Type.Boolean({ default: true, reloadable: true, description: 'decide and journal, never call the API' }),
      journal_retention: Type.String({
        default: '30d',
        unit: 'duration',
        duration: '30d',
        description:
          'duration after which journal rows are pruned, in small batches, hourly (every tenth of a retention shorter than 10h, at most once a minute)',
      }),
      retire_after: Type.String({
        default: '24h',
        unit: 'duration',
        duration: '24h',
        description:
          'how long desired firewall state of a server missing from the server list, or of an IP its server no longer owns, is kept before it and its baremetal_firewall_desired_state series are retired (checked every minute)',
      }),
      budget_per_hour: Type.Integer({
        minimum: 0,
        maximum: 10000,
        default: 10,
        unit: 'calls/hour',
        reloadable: true,
        description: 'upstream calls per rolling hour and per account, all actions together',
      }),
      approval_timeout: Type.String({
        default: '15m',
        unit: 'duration',
        duration: { example: '15m', max: MAX_APPROVAL_TIMEOUT },
        description: `duration after which a request awaiting approval (require_approval) expires, nothing sent; at most ${MAX_APPROVAL_TIMEOUT}`,
      }),
      max_alerts: Type.Integer({
        minimum: 1,
        maximum: MAX_WEBHOOK_ALERTS,
        default: 1000,
        unit: 'alerts',
        description:
          "alerts one webhook delivery may carry; a larger one is refused with 400 and nothing is done (set Alertmanager's webhook_config `max_alerts` at or below it, so that Alertmanager truncates the group instead)",
      }),
      auth: remediationAuth(),
      alertmanager: Type.Optional(alertmanagerSchema),
      safety: safetySchema,
      rules: Type.Array(ruleSchema, {
        default: [],
        reloadable: true,
        description: 'alerts → actions; see [Remediation](remediation.md)',
      }),
    },
    { default: {} },
  ),
});

/** The file after Ajv filled in the defaults. */
export type ConfigFile = Static<typeof configFileSchema>;
