/**
 * `baremetal-exporter remediation test`: the shipped rules' test file passes; changing one expectation fails
 * with a diff naming the step's line (exit 1); a malformed file exits 2 naming the line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runRemediationTest } from '../../../src/cli/remediation-test.js';
import { tempDir } from '../../helpers/tmp.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/remediation-tests.yml', import.meta.url));
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
      line: 4,
      message: 'must NOT have additional properties',
    },
    { name: 'a YAML syntax error', text: 'servers: [\n', line: 2, message: '' },
    {
      name: 'a time that is no duration',
      text: 'remediation: {}\nservers:\n  - { id: "1" }\ntimeline:\n  - at: soon\n',
      line: 5,
      message: 'timeline.0.at',
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
});
