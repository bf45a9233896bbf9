/**
 * `baremetal-exporter remediation test`: the shipped rules' test file passes; changing one expectation fails
 * with a diff naming the step's line (exit 1); a malformed file exits 2 naming the line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runRemediation } from '../../../src/cli/remediation.js';
import { runRemediationTest } from '../../../src/cli/remediation-test.js';
import { MAX_ALIASES, MAX_DEPTH } from '../../../src/cli/remediation-test-file.js';
import { FILE_LIMITS } from '../../../src/read-bounded-file.js';
import { tempDir } from '../../helpers/tmp.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/remediation-tests.yml', import.meta.url));
const HUMAN_PATH = fileURLToPath(new URL('../../fixtures/remediation-tests/human-path.yml', import.meta.url));
const LADDER = fileURLToPath(new URL('../../fixtures/remediation-tests/ladder.yml', import.meta.url));
const GATE = fileURLToPath(new URL('../../fixtures/remediation-tests/outage-gate.yml', import.meta.url));
const REPLICA = fileURLToPath(new URL('../../../examples/ha/replica-a.yml', import.meta.url));

/** Runs the command on `files`; returns its exit code and what it wrote. */
async function run(...files: string[]) {
  let out = '';
  let err = '';
  const sink = (write: (text: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        write(String(chunk));
        done();
      },
    });
  const code = await runRemediationTest(
    files,
    sink((t) => (out += t)),
    sink((t) => (err += t)),
  );
  return { code, out, err };
}

/** The example with `from` replaced by `to`, written to a temp dir (its config_file made absolute). */
function variant(from: string, to: string): string {
  const text = readFileSync(EXAMPLE, 'utf8').replace('config_file: ha/replica-a.yml', `config_file: ${REPLICA}`);
  expect(text).toContain(from);
  const path = join(tempDir(), 'tests.yml');
  writeFileSync(path, text.replace(from, to));
  return path;
}

describe('remediation test', () => {
  it('passes on examples/remediation-tests.yml (the shipped rules)', async () => {
    expect(await run(EXAMPLE)).toEqual({ code: 0, out: `${EXAMPLE}: SUCCESS\n`, err: '' });
  });

  it('passes on the human path: approve, deny, withdraw, expire and close the breaker', async () => {
    expect(await run(HUMAN_PATH)).toEqual({ code: 0, out: `${HUMAN_PATH}: SUCCESS\n`, err: '' });
  });

  it('passes on a ladder: a step that helps, one that does not, then escalated', async () => {
    expect(await run(LADDER)).toEqual({ code: 0, out: `${LADDER}: SUCCESS\n`, err: '' });
  });

  it('runs a config with an outage gate against the alerts the file says Alertmanager holds (issue 49)', async () => {
    expect(await run(GATE)).toEqual({ code: 0, out: `${GATE}: SUCCESS\n`, err: '' });
    // Without the stated alerts the test has no Alertmanager: the gate denies as unknown, and says so.
    const path = join(tempDir(), 'no-alertmanager.yml');
    writeFileSync(path, readFileSync(GATE, 'utf8').replace(/^ {4}alertmanager: .*\n/gm, ''));
    const { code, out } = await run(path);
    expect(code).toBe(1);
    expect(out).toMatch(/"decision":"denied_blocked","message":"whether an outage alert fires is unknown/);
  });

  it('fails a ladder whose step is expected to help when it did not', async () => {
    const path = join(tempDir(), 'ladder.yml');
    const text = readFileSync(LADDER, 'utf8');
    writeFileSync(
      path,
      text.replace(
        'verification: ineffective }\n      - { server_id: "100002", decision: executed, verification: verifying }',
        'verification: verified }',
      ),
    );
    const { code, out, err } = await run(path);
    expect(code).toBe(1);
    expect(out + err).toContain('at 17m: journal rows differ');
  });

  it.each([
    {
      name: 'the requester approving its own request, unexpected',
      from: '    approve: { by: alertmanager }\n    error: another operator must approve or deny it\n',
      to: '    approve: { by: alertmanager }\n',
      diff: 'at 8m: refused: principal alertmanager asked for journal entry 4: another operator must approve or deny it',
    },
    {
      name: 'an approval where a denial was expected',
      from: '    deny: { by: alice, reason: "planned maintenance" }',
      to: '    approve: { by: alice }',
      diff: 'at 6m: journal rows differ',
    },
    {
      name: "an alert's request withdrawn by its webhook principal",
      from: '    withdraw: { by: bob, reason: "the host came back" }',
      to: '    withdraw: { by: alertmanager }',
      diff: "at 9m: refused: journal entry 4 is an alert's request: an operator withdraws it (name one with by:), not alertmanager",
    },
    {
      name: 'an expiry expected before the timeout',
      from: '    expire: true\n',
      to: '',
      diff: 'at 26m: journal rows differ\n  - {"server_id":"100004","decision":"expired"}\n',
    },
    {
      name: 'a refusal expected that does not come',
      from: '    close_breaker: { by: alice, reason: "a broken prober, fixed" }',
      to: '    close_breaker: { by: alice }\n    error: closed already',
      diff: 'at 65m: expected a refusal containing "closed already", none came',
    },
  ])('fails on the human path for $name', async ({ from, to, diff }) => {
    const text = readFileSync(HUMAN_PATH, 'utf8');
    expect(text).toContain(from);
    const path = join(tempDir(), 'human-path.yml');
    writeFileSync(path, text.replace(from, to));
    const { code, out } = await run(path);
    expect(code).toBe(1);
    expect(out).toContain(diff);
  });

  it('fails a step set before the time an expiry moved the clock to', async () => {
    const text = readFileSync(HUMAN_PATH, 'utf8');
    const path = join(tempDir(), 'human-path.yml');
    writeFileSync(path, text.replace('  - at: 56m\n', '  - at: 30m\n'));
    const { code, out } = await run(path);
    expect(code).toBe(1);
    expect(out).toContain('at 30m: before 2026-01-01T00:55:00.000Z, where the expiry moved the clock');
  });

  it('fails with a diff naming the step when an expectation changes (exit 1)', async () => {
    const path = variant(
      'expect: [{ action: powercycle, server_id: "100006", decision: escalated }]',
      'expect: [{ action: powercycle, server_id: "100006", decision: executed }]',
    );
    const line = readFileSync(path, 'utf8').split('\n').indexOf('  - at: 113m') + 1;
    const { code, out } = await run(path);
    expect(code).toBe(1);
    expect(out).toContain(`${path}: FAILED\n${path}:${line}: at 113m: journal rows differ\n`);
    expect(out).toContain('  - {"action":"powercycle","server_id":"100006","decision":"executed"}\n');
    expect(out).toMatch(
      /\+ \{"action":"powercycle","server_id":"100006","decision":"escalated","message":"server 100006 already had 3 power actions/,
    );
  });

  it('says when a rule matches no alert of the file, and when the alerts of a step match no rule', async () => {
    const path = join(tempDir(), 'tests.yml');
    writeFileSync(
      path,
      [
        'remediation:',
        '  dry_run: true',
        '  rules:',
        '    - { alertname: BaremetalServerUnreachable, action: powercycle }',
        '    - { alertname: BaremetalIpUnderAttack, matchers: { severity: critical }, action: firewall_state }',
        'servers: [{ id: "1" }]',
        'timeline:',
        '  - at: 1m',
        '    alert: { alertname: BaremetalServerUnrechable, labels: { server_id: "1" } }',
        '    expect: [{ action: powercycle, server_id: "1", decision: dry_run }]',
        '',
      ].join('\n'),
    );
    const { code, out } = await run(path);
    expect(code).toBe(1);
    expect(out).toContain(`${path}:8: at 1m: journal rows differ (no rule matches the alerts of this step)\n`);
    expect(out).toContain(
      `${path}: warning: rule 1 (BaremetalServerUnreachable → powercycle) matches no alert of the file\n`,
    );
    expect(out).toContain(
      `${path}: warning: rule 2 (BaremetalIpUnderAttack{severity="critical"} → firewall_state) matches no alert of the file\n`,
    );
  });

  it('fails when the upstream calls differ', async () => {
    const path = variant('ip: 198.18.0.1, state: "0" }]', 'ip: 198.18.0.1, state: "1" }]');
    const { code, out } = await run(path);
    expect(code).toBe(1);
    expect(out).toContain('at 16m: upstream calls differ');
  });

  it.each([
    {
      name: 'an unknown key',
      text: 'servers:\n  - { id: "1" }\ntimeline:\n  - at: 1m\n    expekt: []\n',
      line: 5,
      message: 'step 1: unknown key `expekt`',
    },
    {
      name: 'an unknown key of a later step',
      text: 'remediation: {}\nservers:\n  - { id: "1" }\ntimeline:\n  - at: 1m\n  - at: 2m\n  - at: 3m\n    aprove: 1\n',
      line: 8,
      message: 'step 3: unknown key `aprove`',
    },
    {
      name: 'an unknown top-level key',
      text: 'remediation: {}\nserver:\n  - { id: "1" }\n',
      line: 2,
      message: 'unknown key `server`',
    },
    {
      name: 'two kinds of step at once',
      text: 'remediation: {}\nservers:\n  - { id: "1" }\ntimeline:\n  - at: 1m\n    expire: true\n    deny: { by: bob }\n',
      line: 5,
      message:
        'step 1: give one of alert, alerts, payload, approve, deny, withdraw, expire, close_breaker (got deny, expire)',
    },
    {
      name: 'an expected refusal on an alert step',
      text: 'remediation: {}\nservers:\n  - { id: "1" }\ntimeline:\n  - at: 1m\n    error: nope\n',
      line: 6,
      message: 'step 1: error is for an approve, deny, withdraw or close_breaker step',
    },
    { name: 'a YAML syntax error', text: 'servers: [\n', line: 2, message: '' },
    {
      name: 'a time that is no duration',
      text: 'remediation: {}\nservers:\n  - { id: "1" }\ntimeline:\n  - at: soon\n',
      line: 5,
      message: 'not a duration in Prometheus\'s format such as 8m or 1h30m: "soon"',
    },
    {
      name: 'neither remediation nor config_file',
      text: 'servers:\n  - { id: "1" }\ntimeline:\n  - at: 1m\n',
      line: 1,
      message: 'give either remediation or config_file',
    },
  ])('exits 2 naming the line for $name', async ({ text, line, message }) => {
    const path = join(tempDir(), 'bad.yml');
    writeFileSync(path, text);
    const { code, out, err } = await run(path);
    expect({ code, out }).toEqual({ code: 2, out: '' });
    expect(err).toMatch(new RegExp(`^${path}:${line}: `));
    expect(err).toContain(message);
  });

  const aliasBomb = [
    'a: &a [x, x, x, x, x, x, x, x, x]',
    ...['b', 'c', 'd', 'e', 'f'].map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdef'[i]}`).join(', ')}]`),
  ].join('\n');
  const nested = (depth: number) =>
    `remediation: {}\nservers: [{ id: "1" }]\ntimeline:\n  - at: 1m\n    deep: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;

  it.each([
    { name: 'a missing file', text: undefined, message: 'cannot read the file (ENOENT)' },
    {
      name: 'a file larger than the config cap',
      text: `# ${'x'.repeat(FILE_LIMITS.config)}\n`,
      message: `cannot read the file (${FILE_LIMITS.config + 3} bytes, larger than ${FILE_LIMITS.config} bytes)`,
    },
    { name: 'a YAML alias bomb', text: aliasBomb, message: `more than ${MAX_ALIASES} resolved` },
    { name: 'a nesting just too deep', text: nested(MAX_DEPTH), message: `nested deeper than ${MAX_DEPTH} levels` },
    { name: 'a nesting deeper than the parser goes', text: nested(5000), message: `nested deeper than ${MAX_DEPTH}` },
  ])('exits 2 naming the file for $name', async ({ text, message }) => {
    const path = join(tempDir(), 'bad.yml');
    if (text !== undefined) writeFileSync(path, text);
    const { code, out, err } = await run(path);
    expect({ code, out }).toEqual({ code: 2, out: '' });
    expect(err).toMatch(new RegExp(`^${path}(:\\d+)?: `));
    expect(err).toContain(message);
    expect(err.split('\n')).toHaveLength(2);
  });

  it('names the config_file it cannot read', async () => {
    const dir = tempDir();
    const path = join(dir, 'tests.yml');
    writeFileSync(path, 'config_file: missing.yml\nservers: [{ id: "1" }]\ntimeline:\n  - at: 1m\n');
    const { code, err } = await run(path);
    expect(code).toBe(2);
    expect(err).toContain(`${path}:1: config_file: ${join(dir, 'missing.yml')}: cannot read the file (ENOENT)`);
  });

  it.each(['test', 'replay'])('remediation %s --help prints its usage (exit 0)', async (sub) => {
    let out = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        out += String(chunk);
        done();
      },
    });
    expect(await runRemediation([sub, '--help'], sink)).toBe(0);
    expect(out).toMatch(new RegExp(`^Usage: baremetal-exporter remediation ${sub} `));
  });
});
