import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { requireBinary } from '../helpers/binaries.js';

const promtool = requireBinary('/usr/bin/promtool', 'prometheus');
const run = (args: string[]) =>
  execFileSync(promtool.skip ? '' : promtool.path, args, {
    cwd: 'alerts',
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

describe.skipIf(promtool.skip)('alert and recording rules', () => {
  const ruleFiles = readdirSync('alerts').filter((f) => f.endsWith('.yml'));
  const testFiles = readdirSync('alerts/tests').filter((f) => f.endsWith('.yml'));

  it.each(ruleFiles)('promtool check rules %s', (file) => {
    expect(run(['check', 'rules', file])).toMatch(/SUCCESS: \d+ rules found/);
  });

  it.each(testFiles)('promtool test rules tests/%s', (file) => {
    // promtool prints its verdict on stderr and exits non-zero on a failure (execFileSync throws then).
    expect(() => run(['test', 'rules', `tests/${file}`])).not.toThrow();
  });

  it('has a unit test for every alert', () => {
    const text = ruleFiles.map((f) => readFileSync(`alerts/${f}`, 'utf8')).join('\n');
    const tests = testFiles.map((f) => readFileSync(`alerts/tests/${f}`, 'utf8')).join('\n');
    const alerts = [...text.matchAll(/- alert: (\w+)/g)].map((m) => m[1]!);
    expect(alerts.length).toBeGreaterThan(10);
    for (const alert of alerts) {
      expect(tests, `${alert} fires in a test`).toMatch(
        new RegExp(`alertname: ${alert}\\n\\s+exp_alerts:\\n\\s+- exp_labels`),
      );
      expect(tests, `${alert} stays quiet in a test`).toMatch(new RegExp(`alertname: ${alert}, exp_alerts: \\[\\]`));
    }
  });
});
