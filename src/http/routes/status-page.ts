/**
 * `GET /`: the status page — one server-rendered HTML page with no build step and no external assets: API
 * health, the last run of each poll, the servers under attack (all of them, up to MAX_ATTACKED_ROWS) with the
 * counts, the quiet servers a page of QUIET_PAGE_ROWS at a time (`?page=N`), the latest graph
 * thumbnails (resized by sharp through `/graphs/…?width=`), how many requests await approval and how many
 * circuit breakers are open (to anyone), and — only to a reader or operator of remediation.auth behind web.auth — a banner per open circuit breaker, the
 * requests awaiting approval (at most MAX_AWAITING_ROWS) and the last remediation decisions. It refreshes itself
 * every 30 seconds. Every value is HTML-escaped; a strict CSP
 * forbids scripts. Its size is bounded at any fleet size (issue 22: every server listed made 2.8 MB at 10,000
 * servers, re-rendered on every refresh).
 */
import escapeHtml from 'escape-html';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GraphSummary } from '../../graphs/source.js';
import type { JournalEntry } from '../../store/rows.js';
import { queryInteger, queryIntegerSchema } from '../schemas.js';
import { graphPath } from './graphs.js';
import { byCodeUnits } from '../../order.js';

/** Servers under attack listed at most; the rest are counted and left to `GET /api/v1/attacks`. */
export const MAX_ATTACKED_ROWS = 200;
/** Quiet servers (no IP under attack) listed per page. */
export const QUIET_PAGE_ROWS = 100;
/** Requests awaiting approval listed at most; the rest are counted and left to `GET /api/v1/actions`. */
export const MAX_AWAITING_ROWS = 50;
/** The highest `?page=` accepted. */
const MAX_PAGE = 100_000;

/** An IP of a server or service: its event count and, when under attack, its newest event as the provider described it. */
export interface StatusIp {
  ip: string;
  events: number;
  /** the newest event of the latest history: its `raw` text and time (ms since epoch, when it had one) */
  newest?: { raw: string; time: number | undefined };
}

/** What the page shows; the daemon builds it from each account's state and poll jobs, the metrics, the graph store and the journal. */
export interface StatusView {
  version: string;
  /** 1, 0, or undefined before the first request */
  apiUp: number | undefined;
  polls: Array<{
    account?: string;
    poll: string;
    outcome: string | undefined;
    finishedAt: number | undefined;
    lastSuccessAt: number | undefined;
    durationMs: number | undefined;
  }>;
  /**
   * per polling account, the service whose firewall history was read least recently: how long ago (ms), or
   * — `read` false — since when it waits for its first read (AccountState.oldestRead)
   */
  coverage?: Array<{ account: string; serviceType: string; serviceId: string; ageMs: number; read: boolean }>;
  servers: Array<{
    account?: string;
    serverId: string;
    hostname: string;
    location: string;
    status: string;
    ips: StatusIp[];
  }>;
  services: Array<{ account?: string; serviceType: string; serviceId: string; ips: StatusIp[] }>;
  /** the images `/graphs` serves (the first few) */
  graphs: GraphSummary[];
  /** the latest remediation decisions; undefined unless a reader or operator asks behind web.auth */
  actions: JournalEntry[] | undefined;
  /** the requests awaiting approval, oldest first; undefined as `actions` */
  awaiting?: Array<{
    id: number;
    account: string;
    serverId: string;
    ip: string | null;
    action: string;
    /** the requester */
    principal: string | null;
    /** the alert and the rule it was made under (`rules[N]`, from 0); null for an operator's request */
    rule: string | null;
    reason: string | null;
    /** when it expires (ms since epoch); undefined when the timeout is not known */
    deadline: number | undefined;
  }>;
  /** the accounts whose circuit breaker is open; undefined as `actions` */
  openBreakers?: Array<{ account: string; openedAt: number; message: string | null }>;
  /**
   * how many requests await approval and how many breakers are open, shown to anyone (the details stay behind
   * web.auth); undefined when the journal could not be read
   */
  pendingCounts?: { awaiting: number; openBreakers: number };
  /** the accounts the details (`actions`, `awaiting`, `openBreakers`) are limited to (the viewer's); absent: all */
  detailsOf?: readonly string[];
  /** ms since epoch */
  now: number;
}

/** Shown instead of the decisions on an open page. */
export const HIDDEN_ACTIONS =
  'remediation decisions are shown to a reader or operator (remediation.auth) when web.auth is set';

const e = (value: unknown) => escapeHtml(String(value ?? ''));
const time = (ms: number | undefined) =>
  ms === undefined
    ? '—'
    : new Date(ms)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1d2330;background:#f7f8fa}
h1{font-size:1.4rem;margin:0 0 .2rem}h2{font-size:1.1rem;margin:1.6rem 0 .5rem}
table{border-collapse:collapse;background:#fff;min-width:40%}td,th{border:1px solid #d8dce3;padding:.25rem .6rem;text-align:left;vertical-align:top}
th{background:#eef1f5}.ok{color:#137333;font-weight:600}.bad{color:#b3261e;font-weight:600}
.attack{background:#fde7e6;color:#b3261e;font-weight:600}.muted{color:#6b7280}
.thumbs{display:flex;flex-wrap:wrap;gap:.8rem}.thumbs figure{margin:0;background:#fff;border:1px solid #d8dce3;padding:.4rem}
.thumbs figcaption{font-size:12px;color:#6b7280}.raw{color:#4b5563;font-family:ui-monospace,monospace;overflow-wrap:anywhere}`;

/** The newest event of an attacked IP: its time and the provider's raw text (escaped like every value). */
const newestEvent = (i: StatusIp) =>
  i.newest ? `<br><small class="raw" data-raw="${e(i.ip)}">${e(time(i.newest.time))} · ${e(i.newest.raw)}</small>` : '';

function ipCells(ips: StatusIp[]): string {
  return ips
    .map((i) =>
      i.events > 0
        ? `<span class="attack" data-attacked="${e(i.ip)}">${e(i.ip)} (${i.events} event${i.events === 1 ? '' : 's'})</span>${newestEvent(i)}`
        : `<span>${e(i.ip)}</span>`,
    )
    .join('<br>');
}

const serverRow = (s: StatusView['servers'][number]) =>
  `<tr><td>${e(s.serverId)}</td><td>${e(s.hostname)}</td><td>${e(s.location)}</td><td>${e(s.status)}</td><td>${ipCells(s.ips)}</td></tr>`;
const SERVER_HEADER =
  '<tr><th>server</th><th>hostname</th><th>location</th><th>status</th><th>IPs (events in the last hour)</th></tr>';

/** The quiet servers' page: its rows, and the links to the pages beside it. */
function quietSection(quiet: StatusView['servers'], page: number): string {
  const pages = Math.max(1, Math.ceil(quiet.length / QUIET_PAGE_ROWS));
  const shown = Math.min(page, pages);
  const from = (shown - 1) * QUIET_PAGE_ROWS;
  const rows = quiet.slice(from, from + QUIET_PAGE_ROWS);
  const link = (to: number, text: string) =>
    to >= 1 && to <= pages && to !== shown ? `<a href="?page=${to}" rel="${text}">${text}</a>` : '';
  const nav = `<p class="muted" id="quiet-pages">servers ${rows.length ? from + 1 : 0}–${from + rows.length} of ${quiet.length} · page ${shown} of ${pages} ${link(shown - 1, 'prev')} ${link(shown + 1, 'next')}</p>`;
  return `<h2>Servers without attacks</h2>
${nav}
<table id="servers">${SERVER_HEADER}
${rows.map(serverRow).join('\n')}
</table>`;
}

/** The oldest firewall history read, per account (BaremetalFirewallCoverageStale's figure). */
function coverageLine(view: StatusView): string {
  if (!view.coverage?.length) return '';
  const many = view.coverage.length > 1;
  const parts = view.coverage.map(
    (c) =>
      `${many ? `${e(c.account)}: ` : ''}<strong>${e(Math.round(c.ageMs / 1000))} s</strong> ${c.read ? 'ago' : 'waiting for its first read'} (${e(c.serviceType)} ${e(c.serviceId)})`,
  );
  return `<p id="coverage">Oldest firewall history read: ${parts.join(' · ')}</p>`;
}

/** A banner per open circuit breaker: power actions of that account are denied until an operator closes it. */
function breakerBanners(view: StatusView): string {
  return (view.openBreakers ?? [])
    .map(
      (b) =>
        `<p class="attack" data-breaker="${e(b.account)}">Circuit breaker of account ${e(b.account)} open since ${e(time(b.openedAt))}${b.message ? `: ${e(b.message)}` : ''}. Power actions are denied until an operator closes it (POST /api/v1/remediation/circuit/close).</p>`,
    )
    .join('\n');
}

/** How many requests await approval and breakers are open: to anyone, the details only behind web.auth. */
function pendingCountsLine(view: StatusView): string {
  const c = view.pendingCounts;
  if (c === undefined) return '';
  const hidden =
    view.actions === undefined
      ? ' <span class="muted">(details for a reader or operator when web.auth is set)</span>'
      : view.detailsOf
        ? ` <span class="muted" id="details-of">(details of your accounts only: ${e(view.detailsOf.join(', ') || 'none')})</span>`
        : '';
  return `<p id="pending">Requests awaiting approval: <strong id="awaiting-count">${e(c.awaiting)}</strong> · open circuit breakers: <strong id="open-breakers" class="${c.openBreakers > 0 ? 'bad' : 'ok'}">${e(c.openBreakers)}</strong>${hidden}</p>`;
}

/** The requests awaiting a second operator, with what approves one; nothing on an open page. */
function awaitingSection(view: StatusView): string {
  if (view.awaiting === undefined) return '';
  const rows = view.awaiting.slice(0, MAX_AWAITING_ROWS);
  const more = view.awaiting.length - rows.length;
  const row = (a: NonNullable<StatusView['awaiting']>[number]) =>
    `<tr data-awaiting="${e(a.id)}"><td>${e(a.id)}</td><td>${e(a.account)}</td><td>${e(a.serverId)}${a.ip ? ` ${e(a.ip)}` : ''}</td><td>${e(a.action)}</td><td>${e(a.principal ?? '')}</td><td>${e(a.rule ?? '—')}</td><td>${e(a.reason ?? '')}</td><td>${e(time(a.deadline))}</td><td><code>POST /api/v1/actions/${e(a.id)}/approve</code></td></tr>`;
  return `<h2>Requests awaiting approval</h2>
${
  rows.length
    ? `<table id="awaiting"><tr><th>id</th><th>account</th><th>target</th><th>action</th><th>requester</th><th>rule</th><th>reason</th><th>deadline</th><th>approve (another operator)</th></tr>
${rows.map(row).join('\n')}
</table>${more > 0 ? `\n<p class="muted" id="awaiting-more">and ${more} more: GET /api/v1/actions?decision=awaiting_approval lists them</p>` : ''}`
    : '<p class="muted">none</p>'
}`;
}

/**
 * Renders the page: every count, the servers under attack (at most MAX_ATTACKED_ROWS) and page `page` (from 1;
 * past the last, the last) of the quiet servers. Pure: the same view and page give the same bytes.
 */
export function renderStatusPage(view: StatusView, page = 1): string {
  const attacked = [...view.servers.flatMap((s) => s.ips), ...view.services.flatMap((s) => s.ips)].filter(
    (i) => i.events > 0,
  ).length;
  const byId = (a: { serverId: string }, b: { serverId: string }) => byCodeUnits(a.serverId, b.serverId);
  const underAttack = view.servers.filter((s) => s.ips.some((i) => i.events > 0)).sort(byId);
  const quiet = view.servers.filter((s) => !s.ips.some((i) => i.events > 0)).sort(byId);
  const attackedRows = underAttack.slice(0, MAX_ATTACKED_ROWS);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="30">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>baremetal-exporter status</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style></head>
<body>
<h1>baremetal-exporter</h1>
<p class="muted">version ${e(view.version)} · rendered ${e(time(view.now))} · <a href="metrics">/metrics</a> · <a href="graphs">/graphs</a> · <a href="readyz">/readyz</a></p>
<p>Hosting API: ${view.apiUp === undefined ? '<span class="muted">no request yet</span>' : view.apiUp === 1 ? '<span class="ok" id="api-up">up</span>' : '<span class="bad" id="api-up">down</span>'}
 · servers: <strong>${view.servers.length}</strong> · servers under attack: <strong id="attacked-servers">${underAttack.length}</strong> · IPs under attack: <strong id="attacked-count">${attacked}</strong></p>
${pendingCountsLine(view)}
${breakerBanners(view)}
<h2>Polls</h2>
<table><tr><th>poll</th><th>last outcome</th><th>finished</th><th>duration</th><th>last success</th></tr>
${view.polls.map((p) => `<tr><td>${e(p.poll)}</td><td class="${p.outcome === 'failure' ? 'bad' : 'ok'}">${e(p.outcome ?? '—')}</td><td>${e(time(p.finishedAt))}</td><td>${p.durationMs === undefined ? '—' : `${e(p.durationMs)} ms`}</td><td>${e(time(p.lastSuccessAt))}</td></tr>`).join('\n')}
</table>
${coverageLine(view)}
<h2>Servers under attack</h2>
${
  underAttack.length
    ? `<table id="attacked">${SERVER_HEADER}
${attackedRows.map(serverRow).join('\n')}
</table>${underAttack.length > attackedRows.length ? `\n<p class="muted" id="attacked-more">and ${underAttack.length - attackedRows.length} more: GET /api/v1/attacks lists every attack</p>` : ''}`
    : '<p class="muted">none</p>'
}
${quietSection(quiet, page)}
${
  view.services.length
    ? `<h2>Colocation and transit</h2>
<table><tr><th>type</th><th>service</th><th>IPs seen (events in the last hour)</th></tr>
${view.services.map((s) => `<tr><td>${e(s.serviceType)}</td><td>${e(s.serviceId)}</td><td>${ipCells(s.ips) || '<span class="muted">no events</span>'}</td></tr>`).join('\n')}
</table>`
    : ''
}
<h2>Latest graphs</h2>
<div class="thumbs">
${view.graphs.map((g) => `<figure><a href="${e(graphPath(g.account, g.serverId, g.type, g.scale))}"><img src="${e(graphPath(g.account, g.serverId, g.type, g.scale))}?width=240" width="240" alt="${e(`${g.serverId} ${g.type} ${g.scale}`)}"></a><figcaption>${e(g.serverId)} · ${e(g.type)} · ${e(g.scale)} · ${e(time(g.updatedAt))}</figcaption></figure>`).join('\n') || '<p class="muted">no graph fetched yet</p>'}
</div>
${awaitingSection(view)}
<h2>Last remediation decisions</h2>
${
  view.actions === undefined
    ? `<p class="muted">${HIDDEN_ACTIONS}</p>`
    : view.actions.length
      ? `<table><tr><th>time</th><th>source</th><th>principal</th><th>action</th><th>target</th><th>decision</th><th>message</th><th>reason</th></tr>
${view.actions.map((a) => `<tr><td>${e(time(a.createdAt))}</td><td>${e(a.source)}</td><td>${e(a.principal ?? '')}</td><td>${e(a.action)}${a.value ? ` (${e(a.value)})` : ''}</td><td>${e(a.serverId)}${a.ip ? ` ${e(a.ip)}` : ''}</td><td>${e(a.decision)}</td><td>${e(a.message)}</td><td>${e(a.reason ?? '')}</td></tr>`).join('\n')}
</table>`
      : '<p class="muted">none</p>'
}
</body></html>`;
}

export function statusPageRoutes(
  app: FastifyInstance,
  deps: { statusView: (request: FastifyRequest) => Promise<StatusView> },
): void {
  const schema = {
    querystring: { type: 'object', additionalProperties: false, properties: { page: queryIntegerSchema } },
  };
  app.get<{ Querystring: { page?: string } }>('/', { schema }, async (request, reply) => {
    // Checked first: a bad page is the caller's mistake, whatever the daemon holds.
    const page = queryInteger('page', request.query.page, { min: 1, max: MAX_PAGE }) ?? 1;
    return reply
      .type('text/html; charset=utf-8')
      .header(
        'content-security-policy',
        "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      )
      .header('x-content-type-options', 'nosniff')
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(renderStatusPage(await deps.statusView(request), page));
  });
}
