/**
 * Every command, flag, endpoint, query filter and JSON field the pages name exists, and the alert and
 * recording-rule tables and the runbook match the product (issue 51): a page that names `actions lst`,
 * `--sinse`, `GET /api/v1/action` or `?aprover=` sends a reader to nothing (issue 40, point 10). Read from the
 * code of README.md and docs/*.md (inline spans and fenced blocks) and checked against what the program
 * itself knows: the command words and options of shell completion (cli/completion.ts, over every command) and
 * the flags of the top-level usage (cli/usage.ts); the routes of the daemon's app (`hasRoute`) and, for the
 * hosting API's own paths, of the simulator (its executable contract); a filter against the endpoint itself
 * (a query parameter the route's schema does not have is a 400 naming it); a JSON field against the keys of the
 * API's real replies (a seeded journal, the breakers, an operator's action) and of `remediation replay`'s report
 * types; the alert table and the recording rules of docs/dashboards-and-alerts.md against the rendered mixin;
 * each runbook section that names an operator endpoint also names the command that calls it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { defaultConfig } from '../../../mixin/config.ts';
import { renderRules } from '../../../mixin/render.ts';
import { journalRow } from '../../../src/store/rows.js';
import { ACTIONS_VALUE_OPTIONS } from '../../../src/cli/actions.js';
import { OPTIONS } from '../../../src/cli/api/main.js';
import { CIRCUIT_VALUE_OPTIONS } from '../../../src/cli/circuit.js';
import { completionTable } from '../../../src/cli/completion.js';
import { USAGE } from '../../../src/cli/usage.js';
import type { Principal } from '../../../src/config/types.js';
import { GraphStore } from '../../../src/graphs/store.js';
import { buildApp } from '../../../src/http/app.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { routes as simulatorRoutes } from '../../../src/simulator/routes.js';
import { SimulatorState } from '../../../src/simulator/state.js';
import { captureLogger } from '../../helpers/logger.js';
import { engineHarness } from '../../helpers/remediation.js';
import { tempDir } from '../../helpers/tmp.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const PAGES = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Where a name was found: the page and line, for the failure message. */
interface Found {
  where: string;
  text: string;
}

/** The code of a page: each fenced block's lines (continuations joined) and each inline span, with its line. */
function codeOf(page: string): Found[] {
  const out: Found[] = [];
  let fence: string[] | undefined;
  readFileSync(join(root, page), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const where = `${page}:${i + 1}`;
      if (/^\s*```/.test(line)) {
        fence = fence === undefined ? [] : undefined;
        return;
      }
      if (fence !== undefined) {
        const joined = `${fence.join(' ')} ${line}`.trim();
        if (line.trimEnd().endsWith('\\')) fence.push(line.trimEnd().slice(0, -1));
        else {
          out.push({ where, text: joined });
          fence.length = 0;
        }
        return;
      }
      for (const m of line.matchAll(/``\s?([^`]+?)\s?``|`([^`]+)`/g)) out.push({ where, text: m[1] ?? m[2]! });
    });
  return out;
}

const CODE = PAGES.flatMap(codeOf);

// ---- commands and flags -------------------------------------------------------------------------------------

const TABLE = new Map(completionTable());
const words = (path: string[]) => TABLE.get(path.join(' ')) ?? [];

/** The flags the usage lists under each top-level command (`run`'s --web.listen-address …). */
const USAGE_FLAGS = (() => {
  const flags = new Map<string, Set<string>>();
  let top = '';
  for (const line of USAGE.split('\n')) {
    const head = /^ {2}baremetal-exporter (\S+)/.exec(line);
    if (head) top = head[1]!;
    else if (!/^ {4}/.test(line)) continue;
    const set = flags.get(top) ?? new Set<string>();
    for (const f of line.matchAll(/(?<![\w-])(--[a-z][\w.-]*|-[a-zA-Z])(?![\w-])/g)) set.add(f[1]!);
    flags.set(top, set);
  }
  return flags;
})();

/** The flags a command path may take: its completion words at every prefix, its usage block's, the api's options. */
function flagsOf(path: string[]): Set<string> {
  const set = new Set<string>(['--help', '-h']);
  for (let i = 0; i <= path.length; i++) for (const w of words(path.slice(0, i))) set.add(w);
  for (const f of USAGE_FLAGS.get(path[0] ?? '') ?? []) set.add(f);
  if (path[0] === 'actions') for (const f of ACTIONS_VALUE_OPTIONS) set.add(f);
  if (path[0] === 'circuit') for (const f of CIRCUIT_VALUE_OPTIONS) set.add(f);
  if (path[0] === 'api')
    for (const [name, o] of Object.entries(OPTIONS)) {
      set.add(`--${name}`);
      if (o.short) set.add(`-${o.short}`);
    }
  return set;
}

interface Command {
  where: string;
  text: string;
  /** the command paths (several for `list|show`) */
  paths: string[][];
  /** what is wrong: an unknown command word or flag */
  problems: string[];
}

/** Reads the `baremetal-exporter …` invocations of a snippet: command words as far as they go, then flags. */
function commandsIn(found: Found): Command[] {
  const out: Command[] = [];
  for (const m of found.text.matchAll(/(?:^|[\s($])baremetal-exporter((?:\s+[^\s|;&>]+)*)/g)) {
    // `docker run --name baremetal-exporter …`, `docker build -t baremetal-exporter`: an image's name.
    if (/(?:^|\s)-{1,2}[\w-]+\s*$/.test(found.text.slice(0, m.index))) continue;
    let paths: string[][] = [[]];
    let positional = false;
    const problems: string[] = [];
    for (const raw of m[1]!.trim().split(/\s+/)) {
      const token = raw.replace(/^[[(]+/, '').replace(/[\])…,.]+$/, '');
      if (token === '') continue;
      if (/^-{1,2}[a-zA-Z]/.test(token)) {
        const flag = token.split('=')[0]!;
        if (!paths.some((p) => flagsOf(p).has(flag))) problems.push(`unknown flag ${flag} of "${paths[0]!.join(' ')}"`);
        continue;
      }
      const alternatives = token.split('|');
      if (positional || !alternatives.every((a) => /^[a-z][a-z-]*$/.test(a))) {
        positional = true;
        continue;
      }
      const next: string[][] = [];
      for (const p of paths) {
        const commands = words(p).filter((w) => !w.startsWith('-'));
        if (commands.length === 0) continue;
        for (const a of alternatives)
          if (commands.includes(a)) next.push([...p, a]);
          else problems.push(`unknown command "${[...p, a].join(' ')}"`);
      }
      if (next.length === 0) positional = true;
      else paths = next;
    }
    out.push({ where: found.where, text: m[0].trim(), paths, problems });
  }
  return out;
}

const COMMANDS = CODE.flatMap(commandsIn);

describe('the commands and flags the pages name', () => {
  it('finds the commands (the parser reads the pages at all)', () => {
    const named = new Set(COMMANDS.map((c) => c.paths[0]!.join(' ')));
    for (const path of [
      'run',
      'check-config',
      'actions list',
      'circuit close',
      'remediation replay',
      'api power cycle',
    ])
      expect(named).toContain(path);
  });

  it('each exists, with each of its flags', () => {
    const wrong = COMMANDS.filter((c) => c.problems.length > 0).map(
      (c) => `${c.where}: ${c.text}: ${c.problems.join('; ')}`,
    );
    expect(wrong).toEqual([]);
  });

  it.each([
    { name: 'a misspelt command', text: 'baremetal-exporter actions lst', problem: 'unknown command "actions lst"' },
    { name: 'a misspelt flag', text: 'baremetal-exporter actions list --sinse 24h', problem: 'unknown flag --sinse' },
    {
      name: 'a run flag',
      text: 'baremetal-exporter run --web.listen-adress :9877',
      problem: 'unknown flag --web.listen-adress',
    },
  ])('refuses $name', ({ text, problem }) => {
    expect(commandsIn({ where: 'planted', text })[0]!.problems.join('; ')).toContain(problem);
  });
});

// ---- endpoints and filters ----------------------------------------------------------------------------------

/** An endpoint a page names: method (when given), path as fastify writes it, and the query parameters named. */
interface Endpoint {
  where: string;
  method: string | undefined;
  path: string;
  params: string[];
}

/** `{a,b}` alternatives expanded, `{id}` and `ID` made `:id`. */
function pathsOf(path: string): string[] {
  const alt = /\{([^{}]*,[^{}]*)\}/.exec(path);
  if (alt) return alt[1]!.split(',').flatMap((a) => pathsOf(path.replace(alt[0], a)));
  // `:scale.png` is the one parameter `:file` (a file name) of the graph route, as the page spells it.
  return [
    path
      .replace(/\{(\w+)\}/g, ':$1')
      .replace(/\/[A-Z][A-Z_]*(?=\/|$)/g, '/:param')
      .replace(/(:\w+)\.\w+$/, '$1'),
  ];
}

const ENDPOINT =
  /(?:^|[\s(|])(?:(GET|POST|PUT|DELETE|PATCH|HEAD)\s+)?(\/(?:api\/v1|-)(?:\/[\w{}:.,-]*)*|\/(?=[\s?]|$))(\?[^\s`]*)?/g;

function endpointsIn(found: Found): Endpoint[] {
  const out: Endpoint[] = [];
  for (const m of found.text.matchAll(ENDPOINT)) {
    const [, method, path, query] = m;
    // A bare `/` is only an endpoint with its method; a prefix (`/api/v1`, `/-/…`, `/api/v1/servers/…/x`) is none.
    if (path === '/' && method === undefined) continue;
    const rest = found.text.slice(m.index + m[0].length);
    if (path === '/api/v1' || path === '/-' || (path !== '/' && path!.endsWith('/')) || rest.startsWith('…')) continue;
    const params = [...(query ?? '').matchAll(/[?&]([\w.]+)=/g)].map((p) => p[1]!);
    for (const p of pathsOf(path!.replace(/[.,]$/, ''))) out.push({ where: found.where, method, path: p, params });
  }
  return out;
}

/** Table rows that name an endpoint and, in another cell, the filters it takes (`?account=&server_id=`). */
function tableFilters(page: string): Endpoint[] {
  return readFileSync(join(root, page), 'utf8')
    .split('\n')
    .flatMap((line, i) => {
      if (!line.startsWith('|')) return [];
      const endpoint = /`(GET)\s+(\/[^`\s?]+)`/.exec(line);
      const filters = /`(\?[^`]+)`/.exec(line);
      if (!endpoint || !filters) return [];
      const params = [...filters[1]!.matchAll(/[?&]([\w.]+)=/g)].map((p) => p[1]!);
      return pathsOf(endpoint[2]!).map((path) => ({ where: `${page}:${i + 1}`, method: 'GET', path, params }));
    });
}

/** A path with a valid value for each parameter: the route checks its parameters before its query. */
const SAMPLE: Record<string, string> = {
  ':server_id': '100001',
  ':id': '1',
  ':account': 'default',
  ':type': 'port_bits',
  ':file': 'day.png',
};
const withValues = (path: string) => path.replace(/:\w+/g, (p) => SAMPLE[p] ?? '1');

const ENDPOINTS = [...CODE.flatMap(endpointsIn), ...PAGES.flatMap(tableFilters)];
const READER = 'reader-token-0123456789abcdef';
// An operator too: the console route is an operator's; a filter is judged before any handler acts.
const PRINCIPALS: Principal[] = [{ name: 'reader', bearerToken: READER, roles: ['reader', 'operator'] }];

/** The daemon's app over an engine harness: the pages' endpoints, filters and fields are checked against it. */
function docsApp(h: Awaited<ReturnType<typeof engineHarness>>): ReturnType<typeof buildApp> {
  return buildApp({
    logger: captureLogger().logger,
    exposition: new ExpositionCache({ registry: new Registry() }),
    graphStores: new Map([['default', new GraphStore(tempDir(), 'default')]]),
    graphMaxWidth: 2000,
    statusView: async () => {
      throw new Error('not read by this test');
    },
    attacks: new Map(),
    discovery: () => new Map(),
    reload: async () => ({ ok: true, needsRestart: [] }),
    remediation: {
      engines: new Map([['default', h.engine]]),
      store: h.journal,
      metrics: h.metrics,
      config: h.config,
    },
  });
}

describe('the endpoints and filters the pages name', () => {
  let app: ReturnType<typeof buildApp>;
  let simulator: ReturnType<typeof Fastify>;
  beforeAll(async () => {
    const h = await engineHarness({ principals: PRINCIPALS });
    app = docsApp(h);
    await app.ready();
    // The hosting API's paths, as the simulator serves them (api-command.md names some).
    simulator = Fastify();
    for (const path of Object.keys(simulatorRoutes(new SimulatorState(), 1))) simulator.post(path, async () => ({}));
    await simulator.ready();
  });
  afterAll(async () => {
    await app?.close();
    await simulator?.close();
  });

  const METHODS = ['GET', 'POST'] as const;
  const exists = (e: Endpoint) =>
    (e.method ? [e.method] : METHODS).some(
      (method) =>
        app.hasRoute({ method: method as 'GET', url: e.path }) ||
        simulator.hasRoute({ method: method as 'GET', url: e.path }),
    );

  it('finds the endpoints (the parser reads the pages at all)', () => {
    const named = new Set(ENDPOINTS.map((e) => `${e.method ?? ''} ${e.path}`));
    for (const e of ['GET /api/v1/actions', 'POST /api/v1/actions/:id/approve', 'POST /-/reload', 'GET /'])
      expect(named).toContain(e);
  });

  it('each exists', () => {
    const wrong = ENDPOINTS.filter((e) => !exists(e)).map((e) => `${e.where}: ${e.method ?? '(any)'} ${e.path}`);
    expect(wrong).toEqual([]);
  });

  /**
   * Whether GET `path` takes the query parameter `name`: one its schema lacks is a 400 naming it (the discovery
   * route checks its own: "unknown query parameter"); and the route must refuse a planted one, else it tells
   * nothing.
   */
  const refuses = async (path: string, name: string) => {
    const res = await app.inject({
      method: 'GET',
      url: `${withValues(path)}?${name}=1`,
      headers: { authorization: `Bearer ${READER}` },
    });
    return res.statusCode === 400 && /additional propert|unknown query parameter/.test(res.body);
  };
  const takes = async (path: string, name: string) =>
    !(await refuses(path, name)) && (await refuses(path, 'planted_not_a_filter'));

  it('each filter is one its endpoint takes', async () => {
    const wrong: string[] = [];
    for (const e of ENDPOINTS.filter((x) => x.params.length > 0))
      for (const name of e.params) if (!(await takes(e.path, name))) wrong.push(`${e.where}: ${e.path}?${name}=`);
    expect(wrong).toEqual([]);
    // Planted: the check does refuse a filter the route lacks.
    expect(await takes('/api/v1/actions', 'aprover')).toBe(false);
    expect(await takes('/api/v1/discovery', 'lokation')).toBe(false);
    // It found one: `?acount=` answered every account's attacks until the route refused unknown parameters.
    expect(await takes('/api/v1/attacks', 'acount')).toBe(false);
  });

  it('each filter named alone (`?approver=NAME`) is one a named GET endpoint takes', async () => {
    const gets = [...new Set(ENDPOINTS.filter((e) => e.method === 'GET').map((e) => e.path))];
    const alone = CODE.flatMap((c) => {
      const m = /^\?([\w.]+)=/.exec(c.text);
      return m && !/&/.test(c.text) ? [{ where: c.where, name: m[1]! }] : [];
    });
    expect(alone.length).toBeGreaterThan(0);
    const wrong: string[] = [];
    for (const { where, name } of alone) {
      let taken = false;
      for (const path of gets) if (await takes(path, name)) taken = true;
      if (!taken) wrong.push(`${where}: ?${name}=`);
    }
    expect(wrong).toEqual([]);
  });
});

// ---- JSON fields -------------------------------------------------------------------------------------------

/** Every key of `value`, at any depth. */
function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) keysOf(v, into);
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      into.add(k);
      keysOf(v, into);
    }
  return into;
}

/** The fields `remediation replay`'s report declares (its JSON is these types, cli/replay-report.ts, replay-history.ts). */
const REPORT_FIELDS = new Set(
  ['src/cli/replay-report.ts', 'src/cli/replay-history.ts'].flatMap((file) =>
    [...readFileSync(join(root, file), 'utf8').matchAll(/^\s+(?:readonly\s+)?([a-z]\w*)\??:/gm)].map((m) => m[1]!),
  ),
);

/** Pages whose camelCase code spans are JSON fields of the API's replies or of the replay report. */
const FIELD_PAGES = new Set(['docs/remediation.md', 'docs/runbook.md']);
const camel = (snake: string) => snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
/** The config's keys, every segment of the reference's first column (docs/configuration.md, generated from the schema). */
const CONFIG_KEYS = new Set(
  readFileSync(join(root, 'docs/configuration.md'), 'utf8')
    .split('\n')
    .flatMap((l) => (/^\| `([^`]+)`/.exec(l)?.[1] ?? '').split(/[.[\]]+/))
    .filter((k) => k !== ''),
);

describe('the JSON fields the pages name', () => {
  let harness: Awaited<ReturnType<typeof engineHarness>>;
  let sharedApp: ReturnType<typeof buildApp>;
  beforeAll(async () => {
    harness = await engineHarness({ principals: PRINCIPALS });
    sharedApp = docsApp(harness);
    await sharedApp.ready();
  });
  afterAll(async () => {
    await sharedApp?.close();
  });

  /** The keys of the API's real replies: a seeded journal (an alert's row, a breaker close), the breakers, an action. */
  const replyFields = async () => {
    const h = harness;
    const auth = { authorization: `Bearer ${READER}` };
    const id = await h.journal.insert(
      journalRow({
        account: 'default',
        createdAt: h.clock.now,
        source: 'alert',
        action: 'powercycle',
        serverId: '100001',
        principal: 'alertmanager',
        decision: 'executed',
        labels: '{"alertname":"BaremetalServerUnreachable"}',
        alertname: 'BaremetalServerUnreachable',
        fingerprint: 'f1',
        startsAt: '2026-11-21T11:59:00Z',
        verifyWithinMs: 60_000,
      }),
    );
    await h.journal.settleVerification(id, 'verified', h.clock.now, 'a resolved delivery (docs)');
    const fields = new Set<string>();
    const acted = await sharedApp.inject({
      method: 'POST',
      url: '/api/v1/actions/powercycle',
      headers: auth,
      payload: { server_id: '100001', reason: 'docs' },
    });
    keysOf(acted.json(), fields);
    for (const url of ['/api/v1/actions', `/api/v1/actions/${id}`, '/api/v1/remediation/circuit'])
      keysOf((await sharedApp.inject({ url, headers: auth })).json(), fields);
    return fields;
  };

  it('each camelCase field of the remediation pages is a field of a reply or of the replay report', async () => {
    const fields = await replyFields();
    expect(fields).toContain('verifiedAtIso');
    const wrong = CODE.filter((c) => FIELD_PAGES.has(c.where.split(':')[0]!))
      .filter((c) => /^[a-z]+(?:[A-Z][a-z]*)+$/.test(c.text))
      .filter((c) => !fields.has(c.text) && !REPORT_FIELDS.has(c.text))
      .map((c) => `${c.where}: \`${c.text}\` is no field of the API's replies or of the replay report`);
    expect(wrong).toEqual([]);
  });

  it('no page spells a reply field in snake_case (`verified_at` for `verifiedAt`)', async () => {
    const fields = await replyFields();
    const wrong = CODE.filter((c) => /^[a-z]+(?:_[a-z]+)+$/.test(c.text))
      .filter((c) => fields.has(camel(c.text)) && !fields.has(c.text) && !CONFIG_KEYS.has(c.text))
      .map((c) => `${c.where}: \`${c.text}\`: the API says \`${camel(c.text)}\``);
    expect(wrong).toEqual([]);
    // Planted: the spelling the issue found is refused.
    expect(fields.has(camel('verified_at')) && !fields.has('verified_at') && !CONFIG_KEYS.has('verified_at')).toBe(
      true,
    );
    expect(CONFIG_KEYS).toContain('require_owned_ip');
  });
});

// ---- the alert table and the recording rules against the rendered mixin ---------------------------------

describe('docs/dashboards-and-alerts.md against the rendered mixin', () => {
  const rules = (
    parseYaml(renderRules(defaultConfig)) as {
      groups: Array<{ rules: Array<{ alert?: string; record?: string; labels?: { severity?: string } }> }>;
    }
  ).groups.flatMap((g) => g.rules);
  const page = readFileSync(join(root, 'docs/dashboards-and-alerts.md'), 'utf8');
  /** The alert table's rows: each alert named (`A` / `B` rows name two) with its severity. */
  const table = page
    .split('\n')
    .filter((l) => /^\| `Baremetal\w+`/.test(l))
    .flatMap((l) => {
      const [names, severity] = l.split('|').slice(1, 3);
      return [...names!.matchAll(/`(\w+)`/g)].map((m) => ({ alert: m[1]!, severity: severity!.trim() }));
    });

  it('lists every alert with its severity, and no other', () => {
    const rendered = rules
      .filter((r) => r.alert)
      .map((r) => ({ alert: r.alert!, severity: r.labels?.severity ?? '' }))
      .sort((a, b) => a.alert.localeCompare(b.alert));
    expect([...table].sort((a, b) => a.alert.localeCompare(b.alert))).toEqual(rendered);
  });

  it('names every recording rule, and no other', () => {
    const named = new Set([...page.matchAll(/`(baremetal:[\w:]+)`/g)].map((m) => m[1]!));
    const rendered = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
    expect(rendered.size).toBeGreaterThan(0);
    expect([...named].sort()).toEqual([...rendered].sort());
  });
});

// ---- the runbook's commands -------------------------------------------------------------------------------

/** An operator endpoint, and the command of the command line that calls it (actions.ts, circuit.ts). */
const COMMAND_OF: Array<{ endpoint: RegExp; command: string }> = [
  { endpoint: /POST \/api\/v1\/remediation\/circuit\/close/, command: 'baremetal-exporter circuit close' },
  { endpoint: /POST \/api\/v1\/actions\/(\{id\}|ID|:id)\/approve/, command: 'baremetal-exporter actions approve' },
  { endpoint: /\/deny\b/, command: 'baremetal-exporter actions deny' },
  { endpoint: /POST \/api\/v1\/actions\/(\{id\}|ID|:id)\/withdraw/, command: 'baremetal-exporter actions withdraw' },
];

describe("the runbook's commands", () => {
  const sections = readFileSync(join(root, 'docs/runbook.md'), 'utf8')
    .split(/^## /m)
    .slice(1)
    .map((text) => ({ alert: text.split('\n')[0]!.trim(), text }));

  it('the commands it maps exist', () => {
    for (const { command } of COMMAND_OF) {
      const path = command.split(' ').slice(1);
      expect(words(path.slice(0, -1))).toContain(path.at(-1));
    }
  });

  it('each section that names an operator endpoint also names the command that calls it', () => {
    const wrong = sections.flatMap(({ alert, text }) =>
      COMMAND_OF.filter(({ endpoint, command }) => endpoint.test(text) && !text.includes(command)).map(
        ({ command }) => `${alert}: names the endpoint, not \`${command}\``,
      ),
    );
    expect(wrong).toEqual([]);
  });

  it("has the section each alert's runbook_url points at", () => {
    const urls = (
      parseYaml(renderRules(defaultConfig)) as {
        groups: Array<{ rules: Array<{ alert?: string; annotations?: { runbook_url?: string } }> }>;
      }
    ).groups
      .flatMap((g) => g.rules)
      .flatMap((r) => (r.alert ? [{ alert: r.alert, anchor: r.annotations?.runbook_url?.split('#')[1] }] : []));
    expect(urls.length).toBeGreaterThan(0);
    const anchors = new Set(sections.map((s) => s.alert.toLowerCase()));
    expect(urls.filter((u) => !anchors.has(u.anchor ?? ''))).toEqual([]);
  });
});
