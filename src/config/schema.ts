/**
 * The configuration: its file shape (JSON Schema, with defaults), the normalized `Config` the rest of the
 * code receives, and the checks JSON Schema cannot express (cron expressions, durations, URLs).
 * One source of truth: every key, its default and unit is here; docs/configuration in the README mirrors it.
 */
import { GRAPH_SCALES, GRAPH_TYPES, type GraphScale, type GraphType } from '../upstream/params.js';

/** Default schedules (node-cron, six fields: seconds first). */
export const DEFAULT_SCHEDULES = {
  servers: '0 */5 * * * *',
  firewall: '30 * * * * *',
  graphs: '15 */5 * * * *',
  catalog: '45 7 */6 * * *',
} as const;

/** Poll jobs, each with its own schedule. */
export type JobName = keyof typeof DEFAULT_SCHEDULES;
export const JOB_NAMES = Object.keys(DEFAULT_SCHEDULES) as JobName[];

/** Remediation actions a rule or an operator can ask for. */
export const ACTIONS = ['powercycle', 'poweron', 'poweroff', 'firewall_state', 'firewall_sensitivity'] as const;
export type ActionName = (typeof ACTIONS)[number];

/** Credentials as Alertmanager's http_config and Prometheus's scrape config send them (web.auth, remediation.auth). */
const credentialsSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    bearer_token_files: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    basic_auth_users: { type: 'object', additionalProperties: { type: 'string' }, default: {} },
  },
} as const;

/** JSON Schema of the YAML file. Unknown keys are errors; defaults are filled in by Ajv. */
export const configFileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    upstream: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        base_url: { type: 'string', minLength: 1 },
        api_key: { type: 'string', minLength: 1 },
        api_key_file: { type: 'string', minLength: 1 },
        ca_file: { type: 'string', minLength: 1 },
        timeout: { type: 'string', default: '10s' },
        concurrency: { type: 'integer', minimum: 1, maximum: 256, default: 16 },
        retries: { type: 'integer', minimum: 0, maximum: 10, default: 2 },
        max_response_bytes: { type: 'integer', minimum: 1024, maximum: 1073741824, default: 33554432 },
      },
    },
    web: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        listen_address: { type: 'string', default: '0.0.0.0:9877' },
        tls: {
          type: 'object',
          additionalProperties: false,
          required: ['cert_file', 'key_file'],
          properties: { cert_file: { type: 'string', minLength: 1 }, key_file: { type: 'string', minLength: 1 } },
        },
        auth: credentialsSchema,
      },
    },
    state_dir: { type: 'string', minLength: 1, default: './data' },
    log_level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    schedules: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: Object.fromEntries(
        Object.entries(DEFAULT_SCHEDULES).map(([job, cron]) => [job, { type: 'string', default: cron }]),
      ),
    },
    graphs: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        types: { type: 'array', items: { enum: [...GRAPH_TYPES] }, uniqueItems: true, default: ['port_bits'] },
        scales: { type: 'array', items: { enum: [...GRAPH_SCALES] }, uniqueItems: true, default: ['day'] },
        max_width: { type: 'integer', minimum: 16, maximum: 4096, default: 2000 },
      },
    },
    services: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        colocation_ids: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true, default: [] },
        transit_ids: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true, default: [] },
      },
    },
    firewall: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        max_ips_per_service: { type: 'integer', minimum: 1, maximum: 65536, default: 1024 },
        ip_retention: { type: 'string', default: '24h' },
      },
    },
    remediation: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        dry_run: { type: 'boolean', default: true },
        journal_retention: { type: 'string', default: '30d' },
        budget_per_hour: { type: 'integer', minimum: 0, maximum: 10000, default: 10 },
        auth: credentialsSchema,
        rules: {
          type: 'array',
          default: [],
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['alertname', 'action'],
            properties: {
              alertname: { type: 'string', minLength: 1 },
              matchers: { type: 'object', additionalProperties: { type: 'string' }, default: {} },
              action: { enum: [...ACTIONS] },
              server_id_label: { type: 'string', minLength: 1, default: 'server_id' },
              ip_label: { type: 'string', minLength: 1, default: 'ip' },
              firing_state: { enum: ['0', '1', 0, 1], default: '1' },
              resolved_state: { enum: ['0', '1', 0, 1], default: '0' },
              sensitivity: { enum: ['low', 'medium', 'normal', 'high'] },
              hold: { type: 'string', default: '0s' },
              cooldown: { type: 'string' },
              require_owned_ip: { type: 'boolean', default: true },
            },
          },
        },
      },
    },
  },
} as const;

/** Default cooldown per action, in ms: power 30 minutes; firewall state the API's 2 minutes (contract §8). */
export const DEFAULT_COOLDOWN_MS: Record<ActionName, number> = {
  powercycle: 30 * 60_000,
  poweron: 30 * 60_000,
  poweroff: 30 * 60_000,
  firewall_state: 2 * 60_000,
  firewall_sensitivity: 2 * 60_000,
};

/** One remediation rule, normalized. */
export interface RemediationRule {
  alertname: string;
  /** extra label equality matchers */
  matchers: Record<string, string>;
  action: ActionName;
  serverIdLabel: string;
  ipLabel: string;
  firingState: '0' | '1';
  resolvedState: '0' | '1';
  /** sensitivity set on firing, for `firewall_sensitivity` rules */
  sensitivity?: 'low' | 'medium' | 'normal' | 'high';
  /** delay before the resolved state is applied, ms */
  holdMs: number;
  /** minimum time between two executions on one target, ms */
  cooldownMs: number;
  /** the IP must belong to the server (its record or its firewall history) */
  requireOwnedIp: boolean;
}

/** The validated, normalized configuration handed to `main.ts`'s dependencies. */
export interface Config {
  upstream: {
    /** base address of the API, without `/api/v1` */
    baseUrl: string;
    /** the secret key (per the API contract, §5); never logged */
    apiKey: string;
    /** extra PEM CA bundle for a provider behind a private CA */
    caFile?: string;
    /** connect, headers and body timeout, each, in milliseconds */
    timeoutMs: number;
    /** upstream requests in flight at once, across all jobs */
    concurrency: number;
    /** retries of a failed read (writes are never retried) */
    retries: number;
    /** largest reply body accepted, in bytes; a larger one is aborted (outcome `too_large`) */
    maxResponseBytes: number;
    /** where the key came from: `env`, `file` (api_key_file) or `yaml` (discouraged) */
    apiKeySource: 'env' | 'file' | 'yaml';
  };
  web: {
    host: string;
    port: number;
    /** serve HTTPS with these PEM files (reloaded on change and on SIGHUP) */
    tls?: { certFile: string; keyFile: string };
    /** credentials for /metrics, /graphs and the status page; none configured = open */
    auth: { bearerTokens: string[]; basicAuthUsers: Record<string, string> };
  };
  /** directory for graph images (and later the journal) */
  stateDir: string;
  logLevel: string;
  schedules: Record<JobName, string>;
  graphs: { types: GraphType[]; scales: GraphScale[]; maxWidth: number };
  services: { colocationIds: string[]; transitIds: string[] };
  firewall: {
    /** IP series per service at most; events of further IPs count for the service but create no series */
    maxIpsPerService: number;
    /** a colocation or transit IP with no events for this long loses its series, ms */
    ipRetentionMs: number;
  };
  remediation: {
    /** decide and journal, never call the API (default true) */
    dryRun: boolean;
    /** journal rows older than this are pruned, ms */
    journalRetentionMs: number;
    /** actions sent upstream per rolling hour, all kinds together */
    budgetPerHour: number;
    /** bearer tokens read from `bearer_token_files`; never logged */
    bearerTokens: string[];
    /** user → bcrypt hash */
    basicAuthUsers: Record<string, string>;
    rules: RemediationRule[];
  };
}
