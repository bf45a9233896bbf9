/**
 * The YAML configuration file's schema, declared once with TypeBox: every key's default, unit and description
 * (see config/schema.ts for the format keywords and annotations). Build time only: `npm run schemas` writes it as
 * plain JSON Schema into config/generated/config-file.ts, which config/schema.ts re-exports; nothing at run time
 * imports this module (TypeBox costs about 23 MB of RSS, issue 53).
 */
import ms from 'ms';
import { Type } from 'typebox';
import { oneOf, stringMap, strictObject as strict } from '../json-schema.js';
import { ACTIONS, DEFAULT_COOLDOWN_MS } from './actions.js';
import { GRAPH_SCALES, GRAPH_TYPES, SENSITIVITIES } from './api-terms.js';
import {
  ACCOUNT_NAME,
  DEFAULT_MAX_REQUESTS_PER_SECOND,
  HOLD_FORMAT,
  MAX_APPROVAL_TIMEOUT,
  MAX_VERIFY_WITHIN,
  MAX_WEBHOOK_ALERTS,
  POLL_SCHEDULES,
  PRINCIPAL_ACTIONS,
  PRINCIPAL_NAME,
  ROLES,
} from './schema-constants.js';

const path = (description: string) => Type.String({ minLength: 1, description });
/** An optional file's path (`remediation.alertmanager.tls_config`'s `*_file`). */
const file = (description: string) => Type.Optional(path(description));

/** Default of `remediation.alertmanager.max_response_bytes`: a reply of a few thousand alerts. */
const DEFAULT_ALERTMANAGER_MAX_BYTES = 8 * 1024 * 1024;

/** The schema of `remediation.alertmanager` (optional: absent, the daemon never calls Alertmanager). */
const alertmanagerSchema = strict(
  {
    url: Type.String({
      minLength: 1,
      description:
        "Alertmanager's address with its path prefix, if any (`http://alertmanager:9093`); `/api/v2/…` is appended",
    }),
    timeout: Type.String({
      default: '10s',
      unit: 'duration',
      duration: '10s',
      description: 'duration of one request, connection to the last byte of the reply',
    }),
    resend_interval: Type.String({
      default: '1m',
      unit: 'duration',
      duration: '1m',
      description:
        "how often Prometheus sends a firing alert again (the larger of its `--rules.alert.resend-delay` and the rule's evaluation interval): an Alertmanager up for less than this may not hold every firing alert yet, so its alert list is no evidence that an alert resolved",
    }),
    max_response_bytes: Type.Integer({
      minimum: 1024,
      maximum: 256 * 1024 * 1024,
      default: DEFAULT_ALERTMANAGER_MAX_BYTES,
      unit: 'bytes',
      description: 'largest reply read (the alert list); a larger one is a failed request',
    }),
    silence_while_handled: Type.Boolean({
      default: true,
      description:
        'silence the alert a request handles while it awaits approval or is verifying (comment: its journal entry), expired when it ends; false: never write to Alertmanager',
    }),
    http_config: strict(
      {
        authorization: Type.Optional(
          strict({
            type: Type.String({ minLength: 1, default: 'Bearer', description: 'the scheme of the header' }),
            credentials_file: Type.String({ minLength: 1, description: 'a file holding the credentials' }),
          }),
        ),
        basic_auth: Type.Optional(
          strict({
            username: Type.String({ minLength: 1, description: 'the user name' }),
            password_file: Type.String({ minLength: 1, description: 'a file holding the password' }),
          }),
        ),
        tls_config: strict(
          {
            ca_file: file('CA certificates (PEM) that verify the server, besides the system ones'),
            cert_file: file('client certificate (PEM), with `key_file`'),
            key_file: file('client key (PEM)'),
            server_name: Type.Optional(
              Type.String({ minLength: 1, description: 'the name the certificate must have' }),
            ),
            insecure_skip_verify: Type.Boolean({ default: false, description: 'do not verify the certificate' }),
          },
          { default: {} },
        ),
      },
      { default: {}, description: 'as Prometheus writes it: one of `authorization` and `basic_auth`, `tls_config`' },
    ),
  },
  { description: "Alertmanager's API v2 (the outage gate); absent: never called" },
);

/** The schema of `remediation.safety.block_while_firing`. */
const blockWhileFiringSchema = Type.Array(Type.String({ minLength: 1 }), {
  default: [],
  maxItems: 100,
  description:
    'Alertmanager matchers (`alertname = "DatacenterOutage"`, `severity =~ "critical|page"`): while an active alert in Alertmanager matches them all, power actions are `denied_blocked`; needs `remediation.alertmanager`, and while it cannot be read they are denied too',
});

/** The schema's `schedules` key of each poll of POLL_SCHEDULES. */
const scheduleKeys = () =>
  Object.fromEntries(
    Object.entries(POLL_SCHEDULES).map(([job, key]) => [
      job,
      Type.String({ default: key.default, unit: 'cron', cron: true, description: key.description }),
    ]),
  ) as { [K in keyof typeof POLL_SCHEDULES]: ReturnType<typeof Type.String> };

/** User → bcrypt hash: each hash checked by the `bcrypt` keyword (config/formats.ts), naming its user. */
const bcryptHashes = (options: { default: Record<string, string>; description: string }) =>
  Type.Unsafe<Record<string, string>>({
    type: 'object',
    additionalProperties: { type: 'string', bcrypt: 'key' },
    ...options,
  });

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
const ruleSchema = strict({
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

/** One entry of `accounts:`: the `upstream` keys plus its name and services. */
const accountSchema = strict({
  name: Type.String({
    pattern: ACCOUNT_NAME.source,
    description: "the account's name, `[a-z0-9_-]{1,32}`, unique: the value of the `account` label",
  }),
  ...upstreamProperties,
  services: servicesSchema(),
  servers: serversSchema(),
});

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
