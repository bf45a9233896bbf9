/**
 * buildApp(deps) → a fastify instance with every route of the daemon. It never listens itself, so tests
 * drive it with `app.inject()`. Every error reply is JSON: `{statusCode, code, error, message}`.
 *
 * Four scopes: health probes (always open), the read-only routes — status page, /metrics (or --web.telemetry-path), /graphs, /api/v1/attacks, /api/v1/discovery —
 * (open unless `web.auth` is set; behind it, web.auth's credentials or a reader's or operator's), `POST /-/reload`
 * (open unless `web.auth` is set; behind it, web.auth's credentials only), and the remediation routes (always
 * behind `remediation.auth`).
 */
import { STATUS_CODES } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { AttackLog } from '../collectors/attacks.js';
import type { ReloadResult } from '../config/reload.js';
import type { AuthLimits, Config, Principal } from '../config/types.js';
import { AuthBusyError, BaremetalError, INTERNAL_ERROR_CODE } from '../errors.js';
import { localGraphs, type GraphSource } from '../graphs/source.js';
import type { GraphStore } from '../graphs/store.js';
import { type AuthCheckOptions, authEnabled, createAuthCheck, type AuthConfig } from './auth.js';
import { AddressAllowance } from './auth-allowance.js';
import { BcryptPool, type PasswordVerifier } from './bcrypt-pool.js';
import { createPrincipalCheck, READ_ROLES, remediationPrincipals } from './principals.js';
import { applyServerLimits, serverLimitOptions } from './server-limits.js';
import { actionRoutes } from './routes/actions.js';
import { approvalRoutes } from './routes/approvals.js';
import { alertmanagerRoutes } from './routes/alertmanager.js';
import { attackRoutes } from './routes/attacks.js';
import { discoveryRoutes, type DiscoverySource } from './routes/discovery.js';
import { graphRoutes } from './routes/graphs.js';
import { healthRoutes, type Readiness } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { statusPageRoutes, type StatusView } from './routes/status-page.js';
import type { StatusViewOptions } from './status-view.js';
import type { StateStore } from '../store/store.js';
import type { Metrics } from '../metrics/definitions.js';
import type { ExpositionCache } from '../metrics/exposition-cache.js';
import type { RemediationEngine } from '../remediation/engine.js';
import { circuitRoutes } from './routes/circuit.js';

export interface AppDeps {
  logger: Logger;
  exposition: ExpositionCache;
  /** each account's graph store, by account name */
  graphStores: ReadonlyMap<string, GraphStore>;
  /** where `/graphs` reads the images from; default: `graphStores` (replicas sharing PostgreSQL: the database) */
  graphSource?: GraphSource;
  /** largest `?width=` of a graph, in pixels */
  graphMaxWidth: number;
  /** credentials for the read-only routes; none = open; a function when they can be reloaded */
  webAuth?: AuthConfig | (() => AuthConfig);
  /** headers added to every reply (`http_server_config.headers` of `--web.config.file`); read per reply */
  headers?: () => Record<string, string>;
  /** reasons the daemon is not ready (empty = ready); default: always ready */
  readiness?: Readiness;
  /**
   * the status page's data; without it `/` is not served. `actions` is false unless a reader or operator
   * (remediation.auth) asks behind web.auth: remediation decisions are then left out, not only hidden; `accounts`
   * are that principal's, when it has them (status-view.ts: its details are of those accounts only)
   */
  statusView?: (options: StatusViewOptions) => Promise<StatusView>;
  /** the latest attack events per account, served as `GET /api/v1/attacks`; without it the route is not served */
  attacks?: ReadonlyMap<string, AttackLog>;
  /** each account's in-scope servers, served as `GET /api/v1/discovery` (Prometheus HTTP SD); without it the route is not served */
  discovery?: DiscoverySource;
  /** the action endpoints; absent in tests of the read-only routes */
  remediation?: {
    /** one engine per account, by account name, over the one journal */
    engines: ReadonlyMap<string, RemediationEngine>;
    store: StateStore;
    /** the registry's metrics (the webhook's counters carry no account) */
    metrics: Metrics;
    config: Config['remediation'];
  };
  /** where the exposition is served (`--web.telemetry-path`, checked by `validateTelemetryPath`); default `/metrics` */
  telemetryPath?: string;
  /** `POST /-/reload` (`--web.enable-lifecycle`), behind web.auth's own credentials only; without it the route is not served */
  reload?: () => Promise<ReloadResult>;
  /** serve HTTPS with these node https options (PEM contents, client certificates, versions) */
  https?: { key: string | Buffer; cert: string | Buffer } & Record<string, unknown>;
  /** checks basic-auth passwords; default: a `BcryptPool` (worker thread, bounded queue) closed with the app */
  passwordVerifier?: PasswordVerifier;
  /** each client address's share of the basic-auth checks (`web.auth_limits`); default: its defaults */
  authLimits?: AuthLimits;
  /** counts basic-auth requests refused without a check (`baremetal_http_auth_refusals_total`) */
  authRefusals?: Metrics['httpAuthRefusals'];
}

/** Request bodies this daemon accepts are small JSON documents (webhooks): 1 MiB at most, on every route. */
export const BODY_LIMIT = 1024 * 1024;

export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    // Scrapes every few seconds would drown the log; failures are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    // Unknown body fields and query parameters are errors, not silently dropped; and a value of the wrong
    // type is an error, not converted (fastify's default `coerceTypes: 'array'` would turn 100001 into
    // "100001" and ["100001"] into "100001"). Query values are strings: routes convert them explicitly.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false } },
    ...serverLimitOptions(deps.https),
  }) as unknown as FastifyInstance;
  applyServerLimits(app.server);
  let verifier = deps.passwordVerifier;
  if (!verifier) {
    const pool = new BcryptPool();
    app.addHook('onClose', () => pool.close());
    verifier = pool;
  }
  // One allowance per client address across both scopes: a flood on /metrics spends the same share as one
  // on the webhook.
  const limits = deps.authLimits;
  const allowance = new AddressAllowance(
    limits
      ? {
          perAddress: limits.inFlightPerAddress,
          burst: limits.wrongPasswordBurst,
          refillMs: limits.wrongPasswordRefillMs,
        }
      : {},
  );
  const authOptions = {
    verifier,
    logger: deps.logger as FastifyBaseLogger,
    allowance,
    ...(deps.authRefusals ? { refusals: deps.authRefusals } : {}),
  };
  app.setErrorHandler((error, request, reply) => {
    const status =
      error instanceof BaremetalError ? error.statusCode : ((error as { statusCode?: number }).statusCode ?? 500);
    // A password check refused under a flood is counted by the auth check (one warning a minute), not logged
    // per request: a flood would otherwise write thousands of error lines.
    if (status >= 500 && !(error instanceof AuthBusyError)) request.log.error({ err: error }, 'request failed');
    if (status === 401)
      void reply.header('www-authenticate', 'Bearer realm="baremetal-exporter", Basic realm="baremetal-exporter"');
    const retryAfter = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
    if (typeof retryAfter === 'number') void reply.header('retry-after', String(retryAfter));
    return reply.code(status).send({
      statusCode: status,
      code: (error as { code?: string }).code ?? INTERNAL_ERROR_CODE,
      // The standard reason phrase of the status (a 502 says "Bad Gateway").
      error: STATUS_CODES[status] ?? (status >= 500 ? STATUS_CODES[500] : STATUS_CODES[400]),
      message: status >= 500 && !(error instanceof BaremetalError) ? 'internal error' : (error as Error).message,
    });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      statusCode: 404,
      code: 'BM_ERR_NOT_FOUND',
      error: STATUS_CODES[404],
      message: `no route ${request.method} ${request.url.split('?')[0]}`,
    }),
  );

  const headers = deps.headers;
  if (headers) app.addHook('onSend', async (_request, reply) => void reply.headers(headers()));
  healthRoutes(app, { readiness: deps.readiness ?? (() => []) });

  // The people who read: remediation principals with a reader's or an operator's role. Behind web.auth they
  // are let in with their own credential besides web.auth's (Prometheus's scrape credential), and only they see
  // the status page's details: one credential per person, and the scrape credential reads nothing else.
  const readers = deps.remediation
    ? remediationPrincipals(deps.remediation.config).filter((p) => p.roles.some((r) => READ_ROLES.includes(r)))
    : [];
  void app.register(async (scope) => {
    const webAuth = deps.webAuth;
    const currentAuth = typeof webAuth === 'function' ? webAuth : () => webAuth;
    /** The principal each request of this scope was let in as (a reader or operator); absent for web.auth's. */
    const viewers = new WeakMap<FastifyRequest, Principal>();
    if (webAuth) {
      const check = currentCheck(webAuth, (auth) => readerOrWebCheck(auth, readers, authOptions));
      scope.addHook('onRequest', async (request) => {
        const principal = await check(request);
        if (principal) viewers.set(request, principal);
      });
    }
    // With no web.auth the page is open to anyone who reaches the port: it leaves the journal out. Behind it, the
    // details are a reader's or an operator's, of its `accounts` only when it has them.
    const viewOptions = (request: FastifyRequest): StatusViewOptions => {
      const auth = currentAuth();
      const viewer = auth !== undefined && authEnabled(auth) ? viewers.get(request) : undefined;
      if (viewer === undefined) return { actions: false };
      return { actions: true, ...(viewer.accounts ? { accounts: viewer.accounts } : {}) };
    };
    if (deps.statusView) statusPageRoutes(scope, { statusView: (request) => deps.statusView!(viewOptions(request)) });
    metricsRoutes(scope, { exposition: deps.exposition, ...(deps.telemetryPath ? { path: deps.telemetryPath } : {}) });
    graphRoutes(scope, { graphs: deps.graphSource ?? localGraphs(deps.graphStores), maxWidth: deps.graphMaxWidth });
    if (deps.attacks) attackRoutes(scope, { attacks: deps.attacks });
    if (deps.discovery) discoveryRoutes(scope, { discovery: deps.discovery });
  });

  if (deps.reload) reloadRoute(app, deps.reload, deps.webAuth, authOptions);

  const remediation = deps.remediation;
  if (remediation) {
    void app.register(async (scope) => {
      // Who calls, and whether its roles allow the route (http/principals.ts).
      scope.addHook('onRequest', createPrincipalCheck(remediationPrincipals(remediation.config), authOptions));
      alertmanagerRoutes(scope, {
        engines: remediation.engines,
        // The config object a reload changes in place.
        rules: () => remediation.config.rules,
        metrics: remediation.metrics,
        maxAlerts: remediation.config.maxAlerts,
      });
      actionRoutes(scope, remediation);
      circuitRoutes(scope, remediation);
      approvalRoutes(scope, remediation);
    });
  }
  return app;
}

/**
 * The check `build` makes of web.auth's credentials as they are now: rebuilt when they are replaced (a web-config
 * reload), so that a check's cache is per set of credentials.
 */
function currentCheck<T>(
  webAuth: AuthConfig | (() => AuthConfig),
  build: (auth: AuthConfig) => (request: FastifyRequest) => Promise<T>,
): (request: FastifyRequest) => Promise<T> {
  const currentAuth = typeof webAuth === 'function' ? webAuth : () => webAuth;
  let checked: AuthConfig | undefined;
  let check: ((request: FastifyRequest) => Promise<T>) | undefined;
  return (request) => {
    const auth = currentAuth();
    if (auth !== checked || !check) [checked, check] = [auth, build(auth)];
    return check(request);
  };
}

/**
 * The check of the read-only scope behind web.auth: web.auth's credentials (Prometheus's scrape credential) or a
 * reader's or operator's own (remediation.auth), in one check (one bcrypt queue, one allowance). Resolves to the
 * principal for a reader's or operator's credential, undefined for web.auth's; 401 for anything else. A basic-auth
 * user named in both is web.auth's.
 */
function readerOrWebCheck(
  web: AuthConfig,
  readers: readonly Principal[],
  options: AuthCheckOptions,
): (request: FastifyRequest) => Promise<Principal | undefined> {
  const byToken = readers.filter((p) => p.bearerToken !== undefined);
  const byUser = new Map(
    readers.flatMap((p) =>
      p.basicAuthHash === undefined || Object.hasOwn(web.basicAuthUsers, p.name) ? [] : ([[p.name, p]] as const),
    ),
  );
  const check = createAuthCheck(
    {
      bearerTokens: [...web.bearerTokens, ...byToken.map((p) => p.bearerToken!)],
      basicAuthUsers: {
        ...Object.fromEntries([...byUser].map(([name, p]) => [name, p.basicAuthHash!])),
        ...web.basicAuthUsers,
      },
    },
    'allow',
    options,
  );
  return async (request) => {
    // With web.auth empty (no credentials), the scope is open, as before: the readers' do not close it.
    if (!authEnabled(web)) return undefined;
    const credential = await check(request);
    if (credential === undefined) return undefined;
    if ('token' in credential)
      return credential.token < web.bearerTokens.length
        ? undefined
        : byToken[credential.token - web.bearerTokens.length];
    return byUser.get(credential.user);
  };
}

/**
 * `POST /-/reload`, as Prometheus has it: 200 when the new configuration is in force (naming the keys that
 * need a restart), 400 with the problems when the new file is invalid, 500 when it could not be reloaded;
 * either way the previous configuration stays in force.
 *
 * In its own scope: it changes the daemon, so behind web.auth it takes web.auth's own credentials only (the
 * administrator's, as Prometheus's --web.enable-lifecycle sits behind its web config), never a reader's or an
 * operator's (remediation.auth), which only read. Open, like the read-only routes, when web.auth is unset.
 */
function reloadRoute(
  app: FastifyInstance,
  reload: () => Promise<ReloadResult>,
  webAuth: AppDeps['webAuth'],
  options: AuthCheckOptions,
): void {
  void app.register(async (scope) => {
    if (webAuth) {
      const check = currentCheck(webAuth, (auth) => createAuthCheck(auth, 'allow', options));
      scope.addHook('onRequest', async (request) => {
        await check(request);
      });
    }
    scope.post('/-/reload', async (_request, reply) => {
      const result = await reload();
      if (result.ok) return { status: 'success', needs_restart: result.needsRestart };
      const status = result.invalid ? 400 : 500;
      return reply.code(status).send({
        statusCode: status,
        code: 'BM_ERR_CONFIG',
        error: STATUS_CODES[status],
        message: 'configuration reload failed; the previous configuration stays in force',
        problems: result.problems,
      });
    });
  });
}
