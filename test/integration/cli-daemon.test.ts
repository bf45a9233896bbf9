/**
 * `baremetal-exporter actions …` and `circuit …`, the built CLI against a real daemon listening on loopback with
 * principals: list (table and JSON), approve by another operator, the requester refused, deny, withdraw, an
 * approval a guard denies (409, nothing sent), the breaker's status and close, TLS, a wrong token, an unreachable
 * daemon and usage errors with their exit codes.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { journalRow } from '../../src/store/rows.js';
import { makeTestPki } from '../helpers/certs.js';
import { runCli } from '../helpers/cli.js';
import { type Harness, startHarness } from '../helpers/daemon.js';
import { freePort } from '../helpers/processes.js';

const POWERCYCLE = '/api/v1/dedicated/powercycle';
const NAMES = ['alice', 'bob', 'audit'] as const;
type Name = (typeof NAMES)[number];
const tokenOf = (name: Name) => `${name}-token-5f1e9c0a7b3d`;

/** A daemon on loopback with three principals (alice needs approval), its token files and the CLI's arguments. */
async function daemonWith(safety: Record<string, unknown> = {}, tls?: { cert: string; key: string }) {
  const h = await startHarness({
    simulator: { servers: 4, attackRate: 0 },
    config: ({ stateDir }) => {
      for (const name of NAMES) writeFileSync(join(stateDir, `${name}.token`), `${tokenOf(name)}\n`);
      if (tls) {
        writeFileSync(join(stateDir, 'cert.pem'), tls.cert);
        writeFileSync(join(stateDir, 'key.pem'), tls.key);
      }
      const file = (name: Name) => join(stateDir, `${name}.token`);
      return {
        ...(tls
          ? { web: { tls: { cert_file: join(stateDir, 'cert.pem'), key_file: join(stateDir, 'key.pem') } } }
          : {}),
        remediation: {
          dry_run: false,
          budget_per_hour: 100,
          // The attack guard is not the subject: without it a power action needs no firewall history.
          safety: { deny_power_when_attacked: false, ...safety },
          auth: {
            principals: [
              {
                name: 'alice',
                bearer_token_file: file('alice'),
                roles: ['operator', 'reader'],
                require_approval: true,
              },
              { name: 'bob', bearer_token_file: file('bob'), roles: ['operator', 'reader'] },
              { name: 'audit', bearer_token_file: file('audit'), roles: ['reader'] },
            ],
          },
        },
      };
    },
    daemon: { listen: true },
  });
  await h.daemon.ready;
  const tokenFile = (name: Name) => join(h.stateDir, `${name}.token`);
  /** runs the CLI as `who` against this daemon (BAREMETAL_TOKEN cleared: only --token.file counts) */
  const cli = (who: Name, args: string[], extra: string[] = []) =>
    runCli([...args, `--daemon.url=${h.daemon.url}`, `--token.file=${tokenFile(who)}`, ...extra], {
      BAREMETAL_TOKEN: '',
    });
  return { h, cli, tokenFile };
}

/** `who` asks for a power cycle of `serverId` through the daemon's API; its reply. */
async function powercycle(h: Harness, who: Name, serverId: string): Promise<{ id: number; decision: string }> {
  const res = await request(`${h.daemon.url}/api/v1/actions/powercycle`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokenOf(who)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ server_id: serverId, reason: 'hung' }),
  });
  return (await res.body.json()) as { id: number; decision: string };
}

const noToken = (out: { stdout: string; stderr: string }) => {
  for (const name of NAMES) expect(out.stdout + out.stderr).not.toContain(tokenOf(name));
};

describe('actions and circuit against a daemon with principals', () => {
  let d: Awaited<ReturnType<typeof daemonWith>>;
  beforeAll(async () => {
    // A request awaiting approval counts toward the breaker too: room for every server of these tests.
    d = await daemonWith({ circuit_breaker: { max_servers: 100 } });
  });
  afterAll(async () => {
    await d?.h.stop();
  });

  it('lists what awaits approval, as a table and as JSON', async () => {
    const asked = await powercycle(d.h, 'alice', '100001');
    expect(asked.decision).toBe('awaiting_approval');
    const listed = await d.cli('bob', ['actions', 'list', '--decision', 'awaiting_approval']);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const [header, ...rows] = listed.stdout.trimEnd().split('\n');
    expect(header).toMatch(
      /^ID\s+CREATED\s+ACCOUNT\s+TARGET\s+ACTION\s+DECISION\s+VERIFICATION\s+PRINCIPAL\s+APPROVER\s+REASON$/,
    );
    expect(rows.find((r) => r.startsWith(`${asked.id} `))).toMatch(
      /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+default\s+100001\s+powercycle\s+awaiting_approval\s+-\s+alice\s+-\s+hung$/,
    );
    const json = await d.cli('bob', ['actions', 'list', '--principal', 'alice', '--server', '100001', '-o', 'json']);
    expect(json.code).toBe(0);
    const { actions } = JSON.parse(json.stdout) as { actions: Array<Record<string, unknown>> };
    expect(actions[0]).toMatchObject({ id: asked.id, principal: 'alice', decision: 'awaiting_approval' });
    noToken(listed);
  });

  it('refuses the requester approving its own request (exit 1, the daemon message); another operator approves', async () => {
    const { id } = await powercycle(d.h, 'alice', '100002');
    const self = await d.cli('alice', ['actions', 'approve', String(id)]);
    expect(self.code).toBe(1);
    expect(self.stderr).toContain(
      `/api/v1/actions/${id}/approve": 403 Forbidden: principal alice asked for journal entry ${id}: another operator must approve or deny it`,
    );
    expect(d.h.sim.callsTo(POWERCYCLE)).toHaveLength(0);

    const approved = await d.cli('bob', ['actions', 'approve', String(id), '--reason', 'checked IPMI, host hung']);
    expect(approved).toMatchObject({ code: 0, stderr: '' });
    expect(approved.stdout).toMatch(/^approved by bob; sent as journal entry \d+: executed\n$/);
    expect(d.h.sim.callsTo(POWERCYCLE)).toHaveLength(1);

    const shown = await d.cli('audit', ['actions', 'show', String(id)]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^decision:\s+approved$/m);
    expect(shown.stdout).toMatch(/^approver:\s+bob$/m);
    expect(shown.stdout).toMatch(/^approverReason:\s+checked IPMI, host hung$/m);

    const again = await d.cli('bob', ['actions', 'approve', String(id), '-o', 'json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ statusCode: 409, code: 'BM_ERR_CONFLICT' });
  });

  it('denies with a reason, and refuses a denial without one (exit 2, nothing asked)', async () => {
    const { id } = await powercycle(d.h, 'alice', '100003');
    const bare = await d.cli('bob', ['actions', 'deny', String(id)]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('--reason TEXT is required');
    const denied = await d.cli('bob', ['actions', 'deny', String(id), '--reason', 'not during the migration']);
    expect(denied).toMatchObject({ code: 0, stderr: '' });
    expect(denied.stdout).toContain('denied by bob: not during the migration; nothing sent');
    const json = await d.cli('audit', [
      'actions',
      'list',
      '--approver',
      'bob',
      '--decision',
      'denied_by_approver',
      '-o',
      'json',
    ]);
    expect(JSON.parse(json.stdout).actions.map((a: { id: number }) => a.id)).toContain(id);
  });

  it('withdraws: only the requester may (another operator is exit 1)', async () => {
    const { id } = await powercycle(d.h, 'alice', '100004');
    const other = await d.cli('bob', ['actions', 'withdraw', String(id)]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(`principal bob did not ask for journal entry ${id}`);
    const own = await d.cli('alice', ['actions', 'withdraw', String(id), '--reason', 'rebooted it by hand']);
    expect(own).toMatchObject({ code: 0, stderr: '' });
    expect(own.stdout).toContain('withdrawn by alice: rebooted it by hand; nothing sent');
  });

  it('lists what was written within --since, a Prometheus duration; the daemon refuses a bad one (400)', async () => {
    const DAY = 86_400_000;
    const old = await d.h.daemon.store.insert(
      journalRow({
        account: 'default',
        createdAt: Date.now() - 2 * DAY,
        source: 'operator',
        action: 'powercycle',
        serverId: '100001',
        principal: 'bob',
        decision: 'executed',
      }),
    );
    const recent = await powercycle(d.h, 'alice', '100001');
    const ids = async (since: string) => {
      const res = await d.cli('audit', ['actions', 'list', '--principal', 'bob', '--since', since, '-o', 'json']);
      expect(res).toMatchObject({ code: 0, stderr: '' });
      return (JSON.parse(res.stdout).actions as Array<{ id: number }>).map((a) => a.id);
    };
    expect(await ids('1d12h')).not.toContain(old);
    expect(await ids('3d')).toContain(old);
    const alices = await d.cli('audit', ['actions', 'list', '--principal', 'alice', '--since', '24h', '-o', 'json']);
    expect((JSON.parse(alices.stdout).actions as Array<{ id: number }>).map((a) => a.id)).toContain(recent.id);
    // Refused before asking (exit 2), and by the daemon itself for a client that does not check.
    const bad = await d.cli('audit', ['actions', 'list', '--since', '5 minutes']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`--since: a duration in Prometheus's format such as 24h or 1h30m (got "5 minutes")`);
    for (const since of ['5 minutes', '0', '366d', '1h30', '-1h']) {
      const res = await request(`${d.h.daemon.url}/api/v1/actions?since=${encodeURIComponent(since)}`, {
        headers: { authorization: `Bearer ${tokenOf('audit')}` },
      });
      expect(res.statusCode).toBe(400);
      expect(((await res.body.json()) as { message: string }).message).toContain(
        "since must be a duration in Prometheus's format from 1ms to 365d",
      );
    }
  });

  it('takes the token from BAREMETAL_TOKEN; a reader may list but not approve', async () => {
    const env = { BAREMETAL_TOKEN: tokenOf('audit') };
    const listed = await runCli(['actions', 'list', '--limit', '1', `--daemon.url=${d.h.daemon.url}`], env);
    expect(listed.code).toBe(0);
    const approve = await runCli(['actions', 'approve', '1', `--daemon.url=${d.h.daemon.url}`], env);
    expect(approve.code).toBe(1);
    expect(approve.stderr).toContain('lacks the role operator');
    noToken(approve);
  });

  it('a wrong token is refused: exit 1 with the daemon message, the token printed nowhere', async () => {
    const wrong = join(d.h.stateDir, 'wrong.token');
    writeFileSync(wrong, 'not-a-valid-token-31337');
    const res = await runCli(['actions', 'list', `--daemon.url=${d.h.daemon.url}`, `--token.file=${wrong}`]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('401');
    expect(res.stdout + res.stderr).not.toContain('not-a-valid-token-31337');
  });

  it.each([
    { name: 'an unknown command', args: ['actions', 'frob'], error: 'actions: unknown command "frob"' },
    { name: 'an unknown option', args: ['actions', 'list', '--bogus'], error: "Unknown option '--bogus'" },
    { name: 'a limit out of range', args: ['actions', 'list', '--limit', '0'], error: '--limit: a whole number' },
    { name: 'an ID that is no number', args: ['actions', 'approve', 'x1'], error: 'ID must be a journal entry' },
    { name: 'no ID', args: ['actions', 'show'], error: 'expected one journal entry ID' },
    { name: 'an output format', args: ['actions', 'list', '-o', 'xml'], error: '--output: must be one of' },
    { name: 'a daemon URL', args: ['actions', 'list', '--daemon.url', 'ftp://x'], error: '--daemon.url: must be' },
    { name: 'circuit without command', args: ['circuit'], error: 'circuit: expected a command' },
    { name: 'a close without reason', args: ['circuit', 'close'], error: '--reason TEXT is required' },
    // Read by the one bounded reader: a device is refused, never read until memory runs out.
    {
      name: 'a token file that is a device',
      args: ['actions', 'list', '--token.file', '/dev/zero'],
      error: '--token.file: cannot read /dev/zero',
    },
    {
      name: 'a CA file that does not exist',
      args: ['actions', 'list', '--daemon.url', 'https://127.0.0.1:1', '--tls.ca-file', '/nonexistent/ca.pem'],
      error: '--tls.ca-file: cannot read /nonexistent/ca.pem (ENOENT)',
    },
  ])('a usage error is exit 2: $name', async ({ args, error }) => {
    const res = await runCli(args, { BAREMETAL_TOKEN: tokenOf('bob') });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(error);
  });

  it('an unreachable daemon is exit 2, naming the URL', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const res = await runCli(['actions', 'list', `--daemon.url=${url}`], { BAREMETAL_TOKEN: tokenOf('bob') });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`[GET] "${url}/api/v1/actions": no reply from the daemon`);
    expect(res.stderr).toContain('ECONNREFUSED');
  });
});

describe('circuit against a daemon whose breaker opens on a 2nd server', () => {
  it('shows it open, an approval meanwhile is exit 1 with nothing sent, closes it with a reason', async () => {
    const { h, cli } = await daemonWith({ circuit_breaker: { max_servers: 1, max_fraction: 0 } });
    const waiting = await powercycle(h, 'alice', '100003');
    expect(waiting.decision).toBe('awaiting_approval');
    expect((await cli('bob', ['circuit', 'status'])).stdout).toMatch(/^default\s+closed\s+-\s+-$/m);
    // Alice's request, awaiting approval, is the one server the window allows: a second one opens the breaker.
    expect((await powercycle(h, 'bob', '100001')).decision).toBe('denied_circuit_open');

    // Read from the daemon's API (the state store), at once: no gauge refreshed later, no /metrics scraped.
    const open = await cli('bob', ['circuit', 'status', '-o', 'json']);
    expect(open.code).toBe(0);
    expect(JSON.parse(open.stdout)).toEqual({
      breakers: [
        {
          account: 'default',
          open: true,
          openedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          closedAt: null,
          message: expect.any(String),
        },
      ],
    });
    // A reader reads it too; the table says since when.
    const asReader = await cli('audit', ['circuit', 'status']);
    expect(asReader.stdout).toMatch(/^default\s+open \(power actions denied\)\s+\d{4}-\d\d-\d\dT/m);

    const approved = await cli('bob', ['actions', 'approve', String(waiting.id), '-o', 'json']);
    expect(approved.code).toBe(1);
    expect(approved.stderr).toContain('BM_ERR_APPROVED_NOT_SENT');
    expect(approved.stderr).toContain('nothing was sent');
    expect(JSON.parse(approved.stdout)).toMatchObject({ sent: false, decision: 'denied_circuit_open' });
    expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(0);

    const closed = await cli('bob', ['circuit', 'close', '--account', 'default', '--reason', 'checked the rack']);
    expect(closed).toMatchObject({ code: 0, stderr: '' });
    expect(closed.stdout).toMatch(/^account default: .+ \(journal entry \d+\)\n$/);
    expect((await cli('bob', ['circuit', 'status'])).stdout).toMatch(/^default\s+closed\s+\d{4}-\d\d-\d\dT/m);
    const [row] = await h.daemon.store.list({ action: 'circuit_close', limit: 1 });
    expect(row).toMatchObject({ decision: 'circuit_closed', principal: 'bob', reason: 'checked the rack' });
  });
});

describe('an https daemon', () => {
  it('is reached with --tls.ca-file, and refused without it (exit 2)', async () => {
    const pki = makeTestPki();
    const { h, tokenFile } = await daemonWith({}, pki);
    const ca = join(h.stateDir, 'ca.pem');
    writeFileSync(ca, pki.ca);
    const url = h.daemon.url;
    expect(url).toMatch(/^https:/);
    const args = ['actions', 'list', `--daemon.url=${url}`, `--token.file=${tokenFile('bob')}`];
    expect((await runCli([...args, `--tls.ca-file=${ca}`])).code).toBe(0);
    const untrusted = await runCli(args);
    expect(untrusted.code).toBe(2);
    expect(untrusted.stderr).toContain(`"${url}/api/v1/actions": no reply from the daemon`);
  });
});
