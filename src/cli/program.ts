/**
 * The command line's commands: `run --config FILE` (the daemon), `demo` (simulator + daemon on loopback),
 * `simulate` (the simulator alone), `check-config`, and the dispatch to the others (each in its own file of
 * cli/, loaded on demand). Composition root: parses arguments, loads config, starts, and stops cleanly on
 * SIGTERM/SIGINT. `cli/main.ts` runs it; tests call `runProgram` in process.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { redactBaseUrl } from '../config/base-url.js';
import { describeScope } from '../config/scope.js';
import { configWarnings } from '../config/warnings.js';
import { DEFAULT_TELEMETRY_PATH, validateTelemetryPath } from '../http/telemetry-path.js';
import { budgetPlan } from '../polls/budget-plan.js';
import { BaremetalError, ConfigError } from '../errors.js';
import { createLogger, LOG_FORMATS, type LogFormat } from '../logger.js';
import type { SimulatorServerOptions } from '../simulator/server.js';
import { ATTACKED_PER_HOUR, DEMO_SIMULATOR, slotAttackRate } from '../simulator/state.js';
import { asksHelp, type CommandName, usageBlock } from './commands.js';
import { USAGE } from './usage.js';
import { VERSION } from '../version.js';

/** The demo's webhook token: public on purpose (README), and the demo never leaves dry run. */
const DEMO_TOKEN = 'demo-remediation-token';

/** How long a stop may take (in-flight upstream calls, journal writes) before the process exits anyway, ms. */
const SHUTDOWN_TIMEOUT_MS = 30_000;

/** Where the stop messages go: the daemon's logger (same format and timestamps as every line), else stderr. */
type StopLog = { info(msg: string): void; error(msg: string): void };
const STDERR: StopLog = {
  info: (msg) => process.stderr.write(`${msg}\n`),
  error: (msg) => process.stderr.write(`${msg}\n`),
};

function onStop(stop: () => Promise<void>, log: StopLog = STDERR): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal} received, stopping`);
    const timer = setTimeout(() => {
      log.error(`stop did not finish within ${SHUTDOWN_TIMEOUT_MS / 1000}s; exiting`);
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
    stop().then(
      () => {
        clearTimeout(timer);
        process.exit(0);
      },
      (error: unknown) => {
        log.error(`error while stopping: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}

const num = (value: string | undefined, fallback: number) => (value === undefined ? fallback : Number(value));

/** `NAME --help` (or `-h`) anywhere in `args`: prints the command's usage block; true when it did. */
function helped(name: CommandName, args: string[]): boolean {
  if (!asksHelp(args)) return false;
  process.stdout.write(usageBlock(name));
  return true;
}

/** A port flag's value: a whole number from 0 (any free port) to 65535, or a usage error naming the flag. */
function portOf(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[0-9]{1,5}$/.test(value) || Number(value) > 65535)
    throw new BaremetalError(`${flag}: a port from 0 (any free one) to 65535 (got ${JSON.stringify(value)})`);
  return Number(value);
}

async function simulate(args: string[]): Promise<void> {
  if (helped('simulate', args)) return;
  const { values } = parseArgs({
    args,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'api-key': { type: 'string' },
      servers: { type: 'string' },
      'ips-per-server': { type: 'string' },
      colocations: { type: 'string' },
      transits: { type: 'string' },
      seed: { type: 'string' },
      'attack-rate': { type: 'string' },
      'attacks-per-hour': { type: 'string' },
      latency: { type: 'string' },
      'error-rate': { type: 'string' },
      'html-error-rate': { type: 'string' },
      'malformed-rate': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
    },
  });
  if (Boolean(values['tls-cert']) !== Boolean(values['tls-key']))
    throw new BaremetalError('simulate: --tls-cert and --tls-key go together');
  if (values['attack-rate'] !== undefined && values['attacks-per-hour'] !== undefined)
    throw new BaremetalError('simulate: --attack-rate and --attacks-per-hour are two ways to say one thing; give one');
  const perHour = num(values['attacks-per-hour'], ATTACKED_PER_HOUR);
  if (!(perHour >= 0 && perHour < 1)) throw new BaremetalError('--attacks-per-hour: expected a number in [0, 1)');
  const options: SimulatorServerOptions = {
    host: values.host ?? '127.0.0.1',
    port: num(values.port, 8443),
    apiKey: values['api-key'] ?? process.env.BAREMETAL_API_KEY ?? 'demo-key',
    servers: num(values.servers, 20),
    ipsPerServer: num(values['ips-per-server'], 2),
    colocations: num(values.colocations, 2),
    transits: num(values.transits, 1),
    seed: num(values.seed, 1),
    attackRate: num(values['attack-rate'], slotAttackRate(perHour)),
    faults: {
      latencyMs: num(values.latency, 0),
      errorRate: num(values['error-rate'], 0),
      htmlErrorRate: num(values['html-error-rate'], 0),
      malformedRate: num(values['malformed-rate'], 0),
    },
    ...(values['tls-cert'] && values['tls-key']
      ? {
          tls: await (await import('../http/tls.js')).readTls({
            certFile: values['tls-cert'],
            keyFile: values['tls-key'],
          }),
        }
      : {}),
  };
  for (const [key, value] of Object.entries({ ...options, ...options.faults })) {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new BaremetalError(`--${key}: expected a number`);
  }
  const { startSimulator } = await import('../simulator/server.js');
  const sim = await startSimulator(options);
  process.stdout.write(`simulator listening on ${sim.url}\n`);
  onStop(() => sim.close());
}

async function demo(args: string[]): Promise<void> {
  if (helped('demo', args)) return;
  const { values } = parseArgs({ args, options: { port: { type: 'string' }, 'simulator.port': { type: 'string' } } });
  const port = portOf('--port', values.port, 9877);
  const simulatorPort = portOf('--simulator.port', values['simulator.port'], 0);
  // The simulator's key: BAREMETAL_API_KEY when set, else a random one; either way it is never printed.
  const apiKey = process.env.BAREMETAL_API_KEY || randomBytes(16).toString('hex');
  const [{ startSimulator }, { startDaemon }] = await Promise.all([
    import('../simulator/server.js'),
    import('../daemon/start.js'),
  ]);
  const sim = await startSimulator({ ...DEMO_SIMULATOR, apiKey, port: simulatorPort });
  const attacked = [...sim.state.servers.values()][0]!.ips[0]!;
  sim.state.startAttack(attacked, 6 * 3600);
  const stateDir = './data/demo';
  mkdirSync(stateDir, { recursive: true });
  // A documented token so that a new user can post a sample alert (README, "Remediation"); dry run only.
  writeFileSync(`${stateDir}/demo-token`, `${DEMO_TOKEN}\n`, { mode: 0o600 });
  const [{ configFromDocument }, { DEFAULT_ACCOUNT }] = await Promise.all([
    import('../config/load.js'),
    import('../config/schema.js'),
  ]);
  const config = await configFromDocument(
    {
      upstream: { base_url: sim.url, timeout: '5s', concurrency: 8 },
      web: { listen_address: `127.0.0.1:${port}` },
      state_dir: stateDir,
      schedules: {
        servers: '*/30 * * * * *',
        firewall: '*/15 * * * * *',
        graphs: '0 * * * * *',
        catalog: '0 */10 * * * *',
      },
      graphs: { types: ['port_bits', 'port_errors'], scales: ['day', 'week'] },
      services: { colocation_ids: ['colo-1', 'colo-2'], transit_ids: ['transit-1'] },
      remediation: {
        dry_run: true,
        // One principal with every role, so the demo's token can post alerts, act and read the journal.
        auth: {
          principals: [
            { name: 'demo', bearer_token_file: `${stateDir}/demo-token`, roles: ['webhook', 'operator', 'reader'] },
          ],
        },
        rules: [
          {
            alertname: 'BaremetalIpUnderAttack',
            matchers: { severity: 'critical' },
            action: 'firewall_state',
            firing_state: 1,
            resolved_state: 0,
            hold: '5m',
          },
          { alertname: 'BaremetalServerUnreachable', action: 'powercycle', cooldown: '30m' },
        ],
      },
    },
    { BAREMETAL_API_KEY: apiKey },
  );
  const daemon = await startDaemon(config);
  // Registered before the initial polls finish: a Ctrl-C during them stops both cleanly.
  onStop(async () => {
    await daemon.stop();
    await sim.close();
  });
  await daemon.ready;
  const first = [...(daemon.accounts.get(DEFAULT_ACCOUNT)?.state.inventory.keys() ?? [])][0] ?? '100001';
  process.stdout.write(
    [
      '',
      'baremetal-exporter demo: the exporter polls an embedded simulator of the hosting API.',
      `  simulator (API):  ${sim.url}   (${sim.state.servers.size} servers, IP ${attacked} under attack)`,
      `  metrics:          ${daemon.url}/metrics`,
      `  a graph:          ${daemon.url}/graphs/dedicated/${first}/port_bits/day.png`,
      `  all graphs:       ${daemon.url}/graphs`,
      `  remediation:      ${daemon.url}/api/v1/actions   (dry run; header "Authorization: Bearer ${DEMO_TOKEN}")`,
      'Ctrl-C stops.',
      '',
    ].join('\n'),
  );
}

/** `run`'s flags, named as exporter-toolkit and Prometheus name theirs; they override the config file. */
async function run(args: string[]): Promise<void> {
  if (helped('run', args)) return;
  const { values } = parseArgs({
    args,
    options: {
      'config.file': { type: 'string' },
      config: { type: 'string', short: 'c' },
      'web.listen-address': { type: 'string', multiple: true },
      'web.config.file': { type: 'string' },
      'log.level': { type: 'string' },
      'log.format': { type: 'string' },
      'web.enable-lifecycle': { type: 'boolean' },
      'web.telemetry-path': { type: 'string' },
    },
  });
  const file = values['config.file'] ?? values.config;
  if (!file) throw new BaremetalError('run: --config.file=FILE is required');
  const telemetryPath = validateTelemetryPath(values['web.telemetry-path'] ?? DEFAULT_TELEMETRY_PATH);
  const format = values['log.format'] ?? 'logfmt';
  if (!(LOG_FORMATS as readonly string[]).includes(format))
    throw new BaremetalError(`--log.format: must be one of ${LOG_FORMATS.join(', ')} (got ${JSON.stringify(format)})`);
  // The same loader and flags at start and at each reload.
  const { applyFlags, loadConfig } = await import('../config/load.js');
  const readConfig = async () =>
    applyFlags(await loadConfig(file), { listen: values['web.listen-address'], logLevel: values['log.level'] });
  const config = await readConfig();
  const webConfigPath = values['web.config.file'];
  // One place for TLS and basic-auth users: both given would leave the operator guessing which is used.
  if (webConfigPath !== undefined && (config.web.tls || Object.keys(config.web.auth.basicAuthUsers).length > 0))
    throw new ConfigError([
      '--web.config.file: given together with web.tls or web.auth.basic_auth_users in the config file; keep one (bearer_token_files may stay)',
    ]);
  const webConfig =
    webConfigPath === undefined
      ? undefined
      : await (await import('../http/web-config.js')).loadWebConfig(webConfigPath);
  const logger = createLogger(config.logLevel, undefined, format as LogFormat);
  const webConfigFile =
    webConfigPath === undefined || webConfig === undefined
      ? undefined
      : new (await import('../http/web-config-reload.js')).WebConfigFile(webConfigPath, logger, webConfig);
  const { startDaemon } = await import('../daemon/start.js');
  const daemon = await startDaemon(config, {
    logger,
    reloadConfig: readConfig,
    lifecycle: values['web.enable-lifecycle'] === true,
    telemetryPath,
    ...(webConfigFile ? { webConfig: webConfigFile } : {}),
  });
  webConfigFile?.watch();
  onStop(() => daemon.stop(), { info: (msg) => logger.info(msg), error: (msg) => logger.error(msg) });
  // The outcome is logged and in baremetal_config_last_reload_successful.
  process.on('SIGHUP', () => void daemon.reload());
}

/**
 * `check-config FILE` or `check-config --config.file FILE` (as `run` and `replay` take it): validates a config
 * (with the environment's overrides); exit 1 listing the problems.
 */
async function checkConfig(args: string[]): Promise<void> {
  if (helped('check-config', args)) return;
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { 'config.file': { type: 'string' }, config: { type: 'string', short: 'c' } },
  });
  const named = [...positionals, ...[values['config.file'], values.config].filter((f) => f !== undefined)];
  if (named.length !== 1)
    throw new BaremetalError('check-config: exactly one FILE expected (check-config FILE or --config.file FILE)');
  const file = named[0]!;
  const { loadConfig } = await import('../config/load.js');
  try {
    const config = await loadConfig(file);
    process.stdout.write(
      `${file}: valid — ${config.accounts.map((a) => `${config.accounts.length > 1 ? `account ${a.name}: ` : ''}API ${redactBaseUrl(a.upstream.baseUrl)} (key from ${a.upstream.apiKeySource})`).join(', ')}, listen ${config.web.host}:${config.web.port}${config.web.tls ? ' (TLS)' : ''}, ` +
        `remediation ${config.remediation.dryRun ? 'dry run' : 'live'} with ${config.remediation.rules.length} rule(s)\n`,
    );
    for (const account of config.accounts.filter((a) => a.upstream.apiKeySource === 'yaml')) {
      process.stdout.write(
        `warning: the API key sits in the config file (account ${account.name}); prefer api_key_file or BAREMETAL_API_KEY\n`,
      );
    }
    for (const account of config.accounts) {
      const scope = describeScope(account.scope);
      if (scope)
        process.stdout.write(`scope${config.accounts.length > 1 ? ` of account ${account.name}` : ''}: ${scope}\n`);
    }
    const off = Object.entries(config.collectors).filter(([, on]) => !on);
    if (off.length > 0) process.stdout.write(`collectors switched off: ${off.map(([name]) => name).join(', ')}\n`);
    const plan = budgetPlan(config);
    for (const line of plan.notes) process.stdout.write(`${line}\n`);
    for (const line of [...plan.warnings, ...configWarnings(config)]) process.stdout.write(`warning: ${line}\n`);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${file}: ${error.message}\n`);
    process.exitCode = 1;
  }
}

/** Every top-level command (commands.ts's list): its arguments in, the exit code out (undefined: 0 or already set). */
export const HANDLERS: Record<CommandName, (args: string[]) => Promise<unknown>> = {
  run,
  demo,
  simulate,
  'check-config': checkConfig,
  api: async (args) => (await import('./api/main.js')).runApi(args),
  remediation: async (args) => (await import('./remediation.js')).runRemediation(args),
  actions: async (args) => (await import('./actions.js')).runActions(args),
  circuit: async (args) => (await import('./circuit.js')).runCircuit(args),
  completion: async (args) => (await import('./completion.js')).runCompletion(args),
};

/** The exit code of what a command threw: 2 for a usage error (ours, BaremetalError, or the parser's), else 1. */
export function exitCodeOfThrown(error: unknown): number {
  const code = (error as { code?: unknown })?.code;
  return error instanceof BaremetalError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) ? 2 : 1;
}

/** Runs the command line `argv` (without node and the script); sets process.exitCode. Throws a usage error. */
export async function runProgram(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  if (command !== undefined && Object.hasOwn(HANDLERS, command)) {
    const code = await HANDLERS[command as CommandName](args);
    if (typeof code === 'number') process.exitCode = code;
    return;
  }
  if (command === '--version' || command === '-v') {
    process.stdout.write(
      `baremetal-exporter ${VERSION} (node ${process.version}, ${process.platform}-${process.arch})\n`,
    );
    return;
  }
  process.stdout.write(USAGE);
  if (command !== undefined && command !== '--help' && command !== '-h' && command !== 'help') process.exitCode = 2;
}
