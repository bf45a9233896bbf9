import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { requireBinary } from '../helpers/binaries.js';

const amtool = requireBinary('/usr/bin/amtool', 'prometheus-alertmanager');
const promtool = requireBinary('/usr/bin/promtool', 'prometheus');
const check = (bin: string, args: string[]) =>
  execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

describe('shipped examples', () => {
  it.skipIf(amtool.skip)('examples/alertmanager.yml passes amtool check-config', () => {
    expect(check(amtool.skip ? '' : amtool.path, ['check-config', 'examples/alertmanager.yml'])).toContain('SUCCESS');
  });
  it.skipIf(promtool.skip)('examples/prometheus.yml passes promtool check config', () => {
    expect(check(promtool.skip ? '' : promtool.path, ['check', 'config', 'examples/prometheus.yml'])).toContain(
      'SUCCESS',
    );
  });
});
