/**
 * Every metric this exporter exposes, its help text and labels, in one place. Built on a Registry passed
 * in (tests use a fresh one each time). docs/metrics.md is generated from this file
 * (`npm run docs`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { ALERTMANAGER_OPERATIONS } from '../alertmanager/client.js';
import { ACTION_SPECS } from '../config/actions.js';
import { ACTIONS, JOB_NAMES } from '../config/schema.js';
import { DECISIONS } from '../store/decisions.js';
import { BUILD } from '../version.js';
import { StateFamily } from './state-family.js';

/** How a poll run ended: the `outcome` label of `baremetal_poll_runs_total`. */
export type RunOutcome = 'success' | 'partial' | 'failure' | 'skipped';

/** Appended to the help of polled values: a scrape never calls the API (see metrics/exposition-cache.ts). */
export const CACHED = 'Cached: as of the last poll; the exposition is re-rendered after each poll and at most 15s old.';

/** The upstream operations the daemon itself calls (polls and remediation); the `api` command's others are not exported. */
export const DAEMON_OPERATIONS = [
  'list_servers',
  'graphs',
  'firewall_history_dedicated',
  'firewall_history_colocation',
  'firewall_history_transit',
  'list_operating_systems',
  'locations',
  // Remediation's, one per action (config/actions.ts).
  ...ACTIONS.map((a) => ACTION_SPECS[a].operation),
] as const;
/** `baremetal_api_requests_total{outcome}`: success and the `outcome` of each UpstreamError class (errors.ts). */
export const REQUEST_OUTCOMES = [
  'success',
  'api_error',
  'http_error',
  'invalid_reply',
  'timeout',
  'tls_error',
  'connection_error',
  'too_large',
  'invalid_request',
  'rate_limited',
  'cancelled',
  'error',
] as const;
/**
 * `baremetal_http_auth_refusals_total{reason}`: why a basic-auth password was refused without being checked
 * (http/auth.ts): the address's wrong-password allowance spent, its checks in flight at their limit, or the
 * bcrypt queue of every address full.
 */
export const AUTH_REFUSAL_REASONS = ['wrong_passwords', 'in_flight', 'busy'] as const;
export type AuthRefusalReason = (typeof AUTH_REFUSAL_REASONS)[number];
/** `baremetal_poll_runs_total{outcome}` (RunOutcome). */
const POLL_OUTCOMES = ['success', 'partial', 'failure', 'skipped'] as const;

/**
 * Builds every metric on `registry`. `defaultMetrics` adds Node's process_* and nodejs_* metrics. The metrics of
 * ACCOUNT_METRICS are typed as AccountCalls: every call names all of their labels, `account` included.
 */
export function createMetrics(
  registry: Registry,
  options: { defaultMetrics?: boolean; version?: string } = {},
): Metrics {
  if (options.defaultMetrics) registerProcessMetrics(registry);
  const metrics = declareMetrics([registry]);
  metrics.buildInfo.set(
    {
      version: options.version ?? '0.0.0',
      revision: BUILD.revision,
      branch: BUILD.branch,
      nodejs: process.version,
      goversion: `node${process.versions.node}`,
    },
    1,
  );
  // Exposed from 0, so that rate() and increase() see the first refusal after a start.
  for (const reason of AUTH_REFUSAL_REASONS) metrics.httpAuthRefusals.inc({ reason }, 0);
  return metrics;
}

/** Every metric, as prom-client types it, registered on `registers`. */
// biome-ignore lint/complexity/noExcessiveLinesPerFunction: the declarative list of every metric, one place (one source of truth per concept)
function declareMetrics(registers: Registry[]) {
  return {
    buildInfo: new Gauge({
      name: 'baremetal_exporter_build_info',
      help: 'Always 1; labels carry the exporter version, the git revision and branch it was built from (unknown when not built from a checkout) and the Node.js version (nodejs, and goversion as other exporters name their runtime).',
      labelNames: ['version', 'revision', 'branch', 'nodejs', 'goversion'] as const,
      registers,
    }),
    apiUp: new Gauge({
      name: 'baremetal_api_up',
      help: `1 when the hosting API is up: 0 when the last servers poll failed, or when every request of the current cycle failed (a cycle is the requests since the last servers poll finished, judged as each poll run ends; cancelled requests do not count). One failing server among many leaves it at 1. ${CACHED}`,
      labelNames: ['account'] as const,
      registers,
    }),
    apiRequests: new Counter({
      name: 'baremetal_api_requests_total',
      help: `HTTP requests (attempts, retries included) sent to the hosting API, by operation and outcome (${REQUEST_OUTCOMES.join(', ')}). ${CACHED}`,
      labelNames: ['account', 'operation', 'outcome'] as const,
      registers,
    }),
    apiRequestDuration: new Histogram({
      name: 'baremetal_api_request_duration_seconds',
      help: `Duration of one HTTP request to the hosting API in seconds, from send to body read, by operation. ${CACHED}`,
      labelNames: ['account', 'operation'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    pollLastSuccess: new Gauge({
      name: 'baremetal_poll_last_success_timestamp_seconds',
      help: `Unix time in seconds at which the poll job last finished with outcome success or partial. The label is poll, not job, which Prometheus reserves for the scrape job. ${CACHED}`,
      labelNames: ['account', 'poll'] as const,
      registers,
    }),
    pollDuration: new Gauge({
      name: 'baremetal_poll_duration_seconds',
      help: `Duration in seconds of the last finished run of the poll job. ${CACHED}`,
      labelNames: ['account', 'poll'] as const,
      registers,
    }),
    pollRuns: new Counter({
      name: 'baremetal_poll_runs_total',
      help: `Runs of each poll job by outcome: success, partial (some items failed), failure, skipped (previous run still going). ${CACHED}`,
      labelNames: ['account', 'poll', 'outcome'] as const,
      registers,
    }),
    pollInterval: new Gauge({
      name: 'baremetal_poll_interval_seconds',
      help: 'Seconds between two scheduled runs of the poll job (from its cron schedule); alerts call a poll stale after 3 of these.',
      labelNames: ['account', 'poll'] as const,
      registers,
    }),
    pollItemsFailed: new Gauge({
      name: 'baremetal_poll_items_failed',
      help: `Items (servers, services, images) that failed in the last run of the poll job. ${CACHED}`,
      labelNames: ['account', 'poll'] as const,
      registers,
    }),
    pollItemsCancelled: new Gauge({
      name: 'baremetal_poll_items_cancelled',
      help: `Items (servers, services, images) of the last run of the poll job left unfinished because the run reached its deadline (its schedule period less a margin of a tenth, at most 1s) or the daemon stopped; their requests were aborted. The run's outcome counts them as not done (partial or failure). ${CACHED}`,
      labelNames: ['account', 'poll'] as const,
      registers,
    }),
    pollItemsPending: new Gauge({
      name: 'baremetal_poll_items_pending',
      help: `Items (services) of the poll job not yet covered in the current round: when a run cannot poll every item within its period at upstream.max_requests_per_second, runs cover the items round-robin, and this many are still waiting for their turn. 0 when every run covers everything. ${CACHED}`,
      labelNames: ['account', 'poll'] as const,
      registers,
    }),
    servers: new Gauge({
      name: 'baremetal_servers',
      help: `Dedicated servers in the latest server list. ${CACHED}`,
      labelNames: ['account'] as const,
      registers,
    }),
    serverRecordsSkipped: new Gauge({
      name: 'baremetal_server_records_skipped',
      help: `Records of the latest server list that were ignored: no usable server id, a duplicate one, or a cancellation field that is neither null, immediate nor end. ${CACHED}`,
      labelNames: ['account'] as const,
      registers,
    }),
    serverInfo: new StateFamily({
      type: 'gauge',
      name: 'baremetal_server_info',
      help: `Always 1 per dedicated server; labels carry its inventory data as the API sent it (empty when the API did not send a field); memory is the provider's text, in GB (e.g. "256 GB"), as a number in baremetal_server_memory_bytes. ${CACHED}`,
      labelNames: [
        'account',
        'server_id',
        'hostname',
        'ip',
        'os',
        'processor',
        'memory',
        'location',
        'status',
      ] as const,
      registers,
    }),
    serverMemory: new StateFamily({
      type: 'gauge',
      name: 'baremetal_server_memory_bytes',
      help: `Memory of the dedicated server in bytes, from the memory field of its record (the provider reports GB, read as GiB: 2^30 bytes; MB and TB are read alike). No series when the field is missing or not a size. ${CACHED}`,
      labelNames: ['account', 'server_id'] as const,
      registers,
    }),
    serverIps: new StateFamily({
      type: 'gauge',
      name: 'baremetal_server_ips',
      help: `IP addresses assigned to the dedicated server according to its record. ${CACHED}`,
      labelNames: ['account', 'server_id'] as const,
      registers,
    }),
    serverCancellation: new StateFamily({
      type: 'gauge',
      name: 'baremetal_server_cancellation_scheduled',
      help: `1 while the dedicated server's record says a cancellation is scheduled; cancellation_type immediate or end (of the billing cycle), as set by the reseller cancellation operation. No series when none is scheduled or the record has no cancellation field. ${CACHED}`,
      labelNames: ['account', 'server_id', 'cancellation_type'] as const,
      registers,
    }),
    attackEvents: new StateFamily({
      type: 'gauge',
      name: 'baremetal_firewall_attack_events_last_hour',
      help: `Firewall (DDoS) events per IP in the latest hour-scale history of the service (service_type dedicated, colocation or transit). ${CACHED}`,
      labelNames: ['account', 'service_type', 'service_id', 'ip'] as const,
      registers,
    }),
    attackEventsTotal: new StateFamily({
      type: 'counter',
      name: 'baremetal_firewall_attack_events_total',
      help: `Distinct firewall (DDoS) events seen per IP since the exporter started, deduplicated by event id. ${CACHED}`,
      labelNames: ['account', 'service_type', 'service_id', 'ip'] as const,
      registers,
    }),
    firewallEventsDropped: new Counter({
      name: 'baremetal_firewall_events_dropped_total',
      help: `Distinct firewall events (by event id) that created no series, by reason: invalid_ip (the event's ip is not an IP address) or ip_limit (the service already has firewall.max_ips_per_service IP series). ${CACHED}`,
      labelNames: ['account', 'reason'] as const,
      registers,
    }),
    firewallHistoryUp: new StateFamily({
      name: 'baremetal_firewall_history_up',
      type: 'gauge',
      help: `1 when the latest firewall-history poll of the service succeeded, 0 when it failed (then its event values are from the poll before). ${CACHED}`,
      labelNames: ['account', 'service_type', 'service_id'] as const,
      registers,
    }),
    firewallHistoryLastSuccess: new StateFamily({
      name: 'baremetal_firewall_history_last_success_timestamp_seconds',
      type: 'gauge',
      help: `Unix time in seconds at which the firewall history of the service was last fetched and applied; time() minus it is how stale the service's attack series are (round-robin coverage polls each service less often than the schedule). ${CACHED}`,
      labelNames: ['account', 'service_type', 'service_id'] as const,
      registers,
    }),
    firewallOldestReadAge: new StateFamily({
      type: 'gauge',
      name: 'baremetal_firewall_history_oldest_read_age_seconds',
      help: `Age in seconds, at the end of the latest firewall run, of the least recently read firewall history among the services in scope (servers, colocation and transit); a service this process has not read yet counts from the start of the first firewall run that had it in scope. Above 3 firewall periods the budget does not cover every service often enough (BaremetalFirewallCoverageStale); 0 with no service. ${CACHED}`,
      labelNames: ['account'] as const,
      registers,
    }),
    graphLastSuccess: new StateFamily({
      type: 'gauge',
      name: 'baremetal_graph_last_success_timestamp_seconds',
      help: `Unix time in seconds at which the graph image (graph = type, scale) of the server was last fetched and decoded. ${CACHED}`,
      labelNames: ['account', 'server_id', 'graph', 'scale'] as const,
      registers,
    }),
    graphImages: new Gauge({
      name: 'baremetal_graph_images',
      help: `Graph images held by the exporter and served under /graphs. ${CACHED}`,
      labelNames: ['account'] as const,
      registers,
    }),
    catalogOperatingSystems: new StateFamily({
      type: 'gauge',
      name: 'baremetal_catalog_operating_systems',
      help: `Installable operating systems in the latest OS list. ${CACHED}`,
      labelNames: ['account'] as const,
      registers,
    }),
    catalogLocations: new StateFamily({
      type: 'gauge',
      name: 'baremetal_catalog_locations',
      help: `Locations in the latest reseller location list. ${CACHED}`,
      labelNames: ['account'] as const,
      registers,
    }),
    actionRequests: new Counter({
      name: 'baremetal_action_requests_total',
      help: `Remediation requests (alerts and operator calls) by action and decision: ${DECISIONS.join(', ')} (the API may have acted: timeout, connection lost or crash mid-call). Rebuilt from the journal at start. ${CACHED}`,
      labelNames: ['account', 'action', 'decision'] as const,
      registers,
    }),
    actionLastFailure: new Gauge({
      name: 'baremetal_action_last_failure_timestamp_seconds',
      help: `Unix time in seconds of the latest remediation request with decision failed or unknown, by action and decision; rebuilt from the journal at start. ${CACHED}`,
      labelNames: ['account', 'action', 'decision'] as const,
      registers,
    }),
    remediationVerifications: new Counter({
      name: 'baremetal_remediation_verifications_total',
      help: "Verified remediation actions (a rule's verify_within) by action, rule (its alertname) and outcome: verified (the alert that caused it resolved within verify_within; for a firewall action also: no attack event on its IP from the call to the deadline), ineffective (still firing at the deadline), unknown (at the deadline Alertmanager gave no evidence either way: unreadable or just restarted; no ladder step). Counted by the replica that ended the verification, and read back from the journal when the engine starts (a restart does not zero it).",
      labelNames: ['account', 'action', 'rule', 'outcome'] as const,
      registers,
    }),
    remediationRecovery: new Histogram({
      name: 'baremetal_remediation_recovery_seconds',
      help: "Seconds from a verified remediation action's upstream call to the resolution of the alert that caused it, by action (read back from the journal when the engine starts; a firewall action verified by the attack data has none).",
      labelNames: ['account', 'action'] as const,
      buckets: [30, 60, 120, 300, 600, 900, 1800, 3600, 7200],
      registers,
    }),
    journalUp: new Gauge({
      name: 'baremetal_journal_up',
      help: '1 when the remediation journal is open and its last write succeeded; 0 when it is unavailable (remediation disabled, the action endpoints answer 503; /readyz names the reason).',
      registers,
    }),
    leader: new Gauge({
      name: 'baremetal_leader',
      help: '1 when this replica is the leader (it polls the API and applies deferred firewall changes), 0 when it is a follower (it answers webhooks and operator calls only). With SQLite (one replica) always 1; with PostgreSQL the leader holds an advisory lock on its own connection. With database.share_accounts one series per account instead (label account): 1 on the replica that leads that account under its lease, 0 on the others.',
      labelNames: ['account'] as const,
      registers,
    }),
    haConfigMismatch: new Gauge({
      name: 'baremetal_ha_config_mismatch',
      help: "1 while this replica disagrees with the live replicas sharing its PostgreSQL database, by reason: mode (database.share_accounts differs from the oldest live replica's), accounts (its account names or base URLs differ), duplicate_name (a live process of another boot holds its replica_name); 0 for the other reasons. While it disagrees it leads no account and /readyz is not ready (BaremetalHaConfigMismatch). No sample with SQLite (one process).",
      labelNames: ['reason'] as const,
      registers,
    }),
    haAccountUnled: new Gauge({
      name: 'baremetal_ha_account_unled',
      help: "1 while the account is in some live replica's config but in none of the replicas that agree on the membership's terms, so no replica can lead it (BaremetalHaAccountUnled); 0 once that changed. Computed the same on every replica from the heartbeat rows. No sample with SQLite (one process).",
      labelNames: ['account'] as const,
      registers,
    }),
    actionPending: new Gauge({
      name: 'baremetal_action_pending',
      help: `Remediation changes waiting to be applied (firewall state inside its hold or 2-minute window), as the leader last read it (after its decisions, and every 10 s for other replicas'); no series on a replica that does not lead the account. ${CACHED}`,
      labelNames: ['account', 'action'] as const,
      registers,
    }),
    firewallDesiredState: new StateFamily({
      type: 'gauge',
      name: 'baremetal_firewall_desired_state',
      help: `Firewall state the daemon wants for the IP, one series per desired-state row in the store whose change is pending or was applied (a request decided in dry run records none; a change cancelled before it was applied wants nothing), as the leader last read them (after its decisions, and every 10 s for other replicas'): 1 Always On, 0 Redirect On Attack. ${CACHED}`,
      labelNames: ['account', 'server_id', 'ip'] as const,
      registers,
    }),
    actionAwaitingApproval: new Gauge({
      name: 'baremetal_action_awaiting_approval',
      help: `Remediation requests journaled awaiting_approval: nothing is sent until another operator approves (require_approval), as the leader last read them (after its decisions, and every 10 s for other replicas'): a series per action a rule or ladder step requires approval for, and per action seen waiting, 0 once none does; no series on a replica that does not lead the account. ${CACHED}`,
      labelNames: ['account', 'action'] as const,
      registers,
    }),
    actionBudgetRemaining: new Gauge({
      name: 'baremetal_action_budget_remaining',
      help: `Upstream remediation calls still allowed in the rolling hour (remediation.budget_per_hour minus calls made by every replica), as the leader last read it (after its decisions, and every 10 s for other replicas'); no series on a replica that does not lead the account. ${CACHED}`,
      labelNames: ['account'] as const,
      registers,
    }),
    remediationCircuitOpen: new Gauge({
      name: 'baremetal_remediation_circuit_open',
      help: "1 while the account's circuit breaker is open (remediation.safety.circuit_breaker): every power action is denied_circuit_open until an operator closes it (POST /api/v1/remediation/circuit/close); else 0. Read from the shared state store by the leader every 10s and after each decision.",
      labelNames: ['account'] as const,
      registers,
    }),
    alertsReceived: new Counter({
      name: 'baremetal_alerts_received_total',
      help: `Alerts received by the Alertmanager webhook receiver, by status (firing, resolved) and matched (true when a remediation rule matched the alert, else false). ${CACHED}`,
      labelNames: ['status', 'matched'] as const,
      registers,
    }),
    alertsLabelsTooLong: new Counter({
      name: 'baremetal_alerts_labels_too_long_total',
      help: 'Alerts received by the Alertmanager webhook receiver that a remediation rule matched and whose labels are longer than a journal row keeps (4096 characters as JSON), by status (firing, resolved): their rows keep the SHA-256 of the labels, no silence is made while they are handled, remediation replay cannot decide them again (logged once per alert delivered).',
      labelNames: ['status'] as const,
      registers,
    }),
    alertmanagerUp: new Gauge({
      name: 'baremetal_alertmanager_up',
      help: "1 when the last request to Alertmanager's API (remediation.alertmanager, its url as the label) succeeded, 0 when it failed (the outage gate then denies power actions; the log says why once); absent when no Alertmanager is configured or none was asked yet.",
      labelNames: ['url'] as const,
      registers,
    }),
    alertmanagerRequests: new Counter({
      name: 'baremetal_alertmanager_requests_total',
      help: `Requests to Alertmanager's API (remediation.alertmanager) by operation (${ALERTMANAGER_OPERATIONS.join(', ')}) and outcome (success, failure); absent when no Alertmanager is configured.`,
      labelNames: ['operation', 'outcome'] as const,
      registers,
    }),
    configReloadSuccessful: new Gauge({
      name: 'baremetal_config_last_reload_successful',
      help: '1 when the last configuration reload (SIGHUP, POST /-/reload) succeeded or none was tried; 0 when the new file was invalid and the previous configuration stays in force.',
      registers,
    }),
    configReloadSuccessAt: new Gauge({
      name: 'baremetal_config_last_reload_success_timestamp_seconds',
      help: 'Unix time in seconds of the last successful configuration load (the start, or a reload).',
      registers,
    }),
    httpAuthRefusals: new Counter({
      name: 'baremetal_http_auth_refusals_total',
      help: 'Basic-auth requests refused without checking their password, by reason: wrong_passwords (429: the client address spent its wrong-password allowance, web.auth_limits.wrong_password_burst, one back per web.auth_limits.wrong_password_refill), in_flight (503: the address already has web.auth_limits.in_flight_per_address checks waiting or running), busy (503: the bcrypt queue shared by every address is full).',
      labelNames: ['reason'] as const,
      registers,
    }),
    renderedAt: new Gauge({
      name: 'baremetal_metrics_rendered_timestamp_seconds',
      help: 'Unix time in seconds at which this exposition was rendered; a scrape serves the last rendering.',
      registers,
    }),
  };
}

/**
 * What only the replica that polls knows: the API's health and the inventory, attack, graph and catalog
 * series its polls set. A follower (HA, PostgreSQL) leaves them out of its exposition — its own would be
 * the initial zeros (`baremetal_api_up 0` would page for every follower) or, after a demotion, the last
 * values it polled, which the fleet alerts (`max without (instance, pod)`) must not keep reading. So are the
 * remediation gauges read from the shared journal (breaker, desired state, pending, awaiting approval, budget):
 * only the leader reads them again (remediation/gauges.ts). Its decision counters and own request counters stay.
 */
export const LEADER_ONLY_METRICS = [
  'apiUp',
  'pollLastSuccess',
  'pollDuration',
  'pollRuns',
  'pollInterval',
  'pollItemsFailed',
  'pollItemsCancelled',
  'pollItemsPending',
  'servers',
  'serverRecordsSkipped',
  'serverInfo',
  'serverMemory',
  'serverIps',
  'serverCancellation',
  'attackEvents',
  'attackEventsTotal',
  'firewallEventsDropped',
  'firewallHistoryUp',
  'firewallHistoryLastSuccess',
  'firewallOldestReadAge',
  'graphLastSuccess',
  'graphImages',
  'catalogOperatingSystems',
  'catalogLocations',
  // Read again by the leader's ticker only: a follower's could hold a breaker another replica closed, desired
  // firewall state another replica changed, or a pending change, a request awaiting approval or a budget that
  // another replica has since applied, approved, withdrawn or spent.
  'remediationCircuitOpen',
  'firewallDesiredState',
  'actionPending',
  'actionAwaitingApproval',
  'actionBudgetRemaining',
] as const satisfies ReadonlyArray<MetricKey>;

/**
 * The event counters whose series appear as events arrive (a new IP under attack): in OpenMetrics each
 * sample is followed by its `_created` time, so a scraper that ingests created timestamps knows the
 * counter started from 0 (docs/metrics-counters.md).
 */
export const CREATED_METRICS = ['attackEventsTotal'] as const satisfies ReadonlyArray<MetricKey>;

/** The names of CREATED_METRICS (as prom-client registered them). */
export function createdNames(metrics: Metrics): Set<string> {
  return new Set(CREATED_METRICS.map((key) => (metrics[key] as unknown as { name: string }).name));
}

/**
 * The metrics each account has its own series of: every one carries the label `account`. The leader's
 * poll-derived ones, and those every replica sets (its own upstream requests, remediation from the journal).
 */
export const ACCOUNT_METRICS = [
  ...LEADER_ONLY_METRICS,
  'apiRequests',
  'apiRequestDuration',
  'actionRequests',
  'actionLastFailure',
  'remediationVerifications',
  'remediationRecovery',
] as const satisfies ReadonlyArray<MetricKey>;

/** The names of LEADER_ONLY_METRICS (as prom-client registered them). */
export function leaderOnlyNames(metrics: Metrics): Set<string> {
  return new Set(LEADER_ONLY_METRICS.map((key) => (metrics[key] as unknown as { name: string }).name));
}

/**
 * Exposes from 0 the series of `account` that alerts read before its first event; called once per account, where
 * its runtime is built (daemon/accounts.ts). The counters whose label values are known, so that rate(), increase()
 * and alerts on them see the first event after a start (a series that appears at 1 has no increase); and the
 * gauges exposed at 0 from the start before accounts (the API down until its first server list says otherwise).
 */
export function exposeAccountFromZero(metrics: Metrics, account: string): void {
  for (const reason of ['invalid_ip', 'ip_limit'] as const) metrics.firewallEventsDropped.inc({ account, reason }, 0);
  for (const action of ACTIONS)
    for (const decision of DECISIONS) metrics.actionRequests.inc({ account, action, decision }, 0);
  for (const operation of DAEMON_OPERATIONS)
    for (const outcome of REQUEST_OUTCOMES) metrics.apiRequests.inc({ account, operation, outcome }, 0);
  for (const poll of JOB_NAMES)
    for (const outcome of POLL_OUTCOMES) metrics.pollRuns.inc({ account, poll, outcome }, 0);
  for (const gauge of [metrics.apiUp, metrics.servers, metrics.serverRecordsSkipped]) gauge.set({ account }, 0);
}

/**
 * prom-client's default process_* and nodejs_* metrics, less the gauges it names `nodejs_active_*_total`:
 * `promtool check metrics` rejects a `_total` suffix on a non-counter, and a scrape must lint clean.
 * `nodejs_eventloop_lag_*` samples the loop every 100 ms, not prom-client's 10 ms: a timer waking the process
 * 100 times a second cost about 6 ms of CPU a second, half of what an idle replica spends (bench/README.md,
 * "Shared accounts"); a block longer than 100 ms is still measured whole.
 */
function registerProcessMetrics(registry: Registry): void {
  const defaults = new Registry();
  collectDefaultMetrics({ register: defaults, eventLoopMonitoringPrecision: 100 });
  for (const metric of defaults.getMetricsAsArray()) {
    if (metric.name.endsWith('_total') && String(metric.type) !== 'counter') continue;
    registry.registerMetric(metric as unknown as Metric);
  }
}

/** Every metric as prom-client types it (declareMetrics). */
type DeclaredMetrics = ReturnType<typeof declareMetrics>;

/** The key of a metric in `Metrics`. */
export type MetricKey = keyof DeclaredMetrics;

/** A label set that names every label of a metric. */
export type AllLabels<L extends string> = Readonly<Record<L, string | number>>;

/**
 * A prom-client metric of ACCOUNT_METRICS as the code may call it: the same object, typed with only the calls
 * that take a label set, and that label set complete. prom-client's own types make every label optional
 * (`LabelValues<T>`) and accept a call with none (`set(3)`), which on these would expose a series without
 * `account`; typed so, forgetting it does not compile. Types only: nothing wraps prom-client's methods.
 */
export type AccountCalls<M> =
  M extends Histogram<infer L>
    ? {
        observe(labels: AllLabels<L>, value: number): void;
        zero(labels: AllLabels<L>): void;
        labels(labels: AllLabels<L>): Histogram.Internal<L>;
        get: Histogram<L>['get'];
      }
    : M extends Gauge<infer L>
      ? { set(labels: AllLabels<L>, value: number): void; get: Gauge<L>['get'] }
      : M extends Counter<infer L>
        ? {
            inc(labels: AllLabels<L>, value?: number): void;
            labels(labels: AllLabels<L>): Counter.Internal;
            get: Counter<L>['get'];
          }
        : M;

/** Every metric of the exporter, by role; those of ACCOUNT_METRICS typed as AccountCalls. */
export type Metrics = {
  readonly [K in MetricKey]: K extends (typeof ACCOUNT_METRICS)[number]
    ? AccountCalls<DeclaredMetrics[K]>
    : DeclaredMetrics[K];
};

/** The families rendered from the accounts' state: collectors/families.ts emits each one's samples. */
export type StateFamilyKey = {
  [K in keyof Metrics]: Metrics[K] extends StateFamily<infer _L> ? K : never;
}[keyof Metrics];
