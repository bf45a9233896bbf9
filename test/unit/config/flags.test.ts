import { describe, expect, it } from 'vitest';
import { configProblems } from '../../helpers/config-problems.js';
import { applyFlags, buildConfig, type ConfigFlags } from '../../../src/config/load.js';

const config = buildConfig(
  { upstream: { base_url: 'https://api.provider.test' }, web: { listen_address: '0.0.0.0:9877' } },
  { BAREMETAL_API_KEY: 'k' },
);

describe('applyFlags', () => {
  it.each<[string, ConfigFlags, object]>([
    ['no flags: the file', {}, { host: '0.0.0.0', port: 9877 }],
    ['one address replaces the file', { listen: ['127.0.0.1:9100'] }, { host: '127.0.0.1', port: 9100 }],
    [
      'further addresses are added',
      { listen: ['127.0.0.1:9100', '[::1]:9101', ':9102'] },
      {
        host: '127.0.0.1',
        port: 9100,
        additional: [
          { host: '::1', port: 9101 },
          { host: '0.0.0.0', port: 9102 },
        ],
      },
    ],
  ])('%s', (_name, flags, web) => {
    expect(applyFlags(config, flags).web).toMatchObject(web);
  });

  it.each<[string, ConfigFlags, string[]]>([
    [
      'a bad second address',
      { listen: ['127.0.0.1:9100', 'nope'] },
      ['--web.listen-address: must be "host:port" (got "nope")'],
    ],
    [
      'a bad level',
      { logLevel: 'loud' },
      ['--log.level: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")'],
    ],
  ])('refuses %s', (_name, flags, problems) => {
    expect(configProblems(() => applyFlags(config, flags))).toEqual(problems);
  });
});
