/**
 * The CLI config file of `actions` and `circuit` (cli/cli-config.ts): where it is looked for, how it is read
 * (keys named as the flags, strictly), and the order flag, environment, file.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliConfigPath, daemonSettings, readCliConfig } from '../../../src/cli/cli-config.js';
import { tempDir } from '../../helpers/tmp.js';

describe('cliConfigPath', () => {
  it.each([
    { env: { XDG_CONFIG_HOME: '/x/cfg', HOME: '/home/a' }, want: '/x/cfg/baremetal-exporter/cli.yml' },
    { env: { HOME: '/home/a' }, want: '/home/a/.config/baremetal-exporter/cli.yml' },
    // The XDG base directory specification: a relative XDG_CONFIG_HOME is ignored.
    { env: { XDG_CONFIG_HOME: 'cfg', HOME: '/home/a' }, want: '/home/a/.config/baremetal-exporter/cli.yml' },
  ])('$env → $want', ({ env, want }) => {
    expect(cliConfigPath(env)).toBe(want);
  });
});

describe('readCliConfig', () => {
  const write = (text: string) => {
    const dir = tempDir();
    const file = join(dir, 'cli.yml');
    writeFileSync(file, text);
    return { dir, file };
  };

  it('reads the keys, a relative file from its directory, with their file:line', async () => {
    const { dir, file } = write('daemon.url: https://d.example.net:9877\n\ntoken.file: tokens/me\noutput: json\n');
    expect(await readCliConfig(file)).toEqual({
      'daemon.url': { value: 'https://d.example.net:9877', source: `${file}:1: daemon.url` },
      'token.file': { value: join(dir, 'tokens/me'), source: `${file}:3: token.file` },
      output: { value: 'json', source: `${file}:4: output` },
    });
  });

  it('is empty for a missing or empty file', async () => {
    expect(await readCliConfig(join(tempDir(), 'none.yml'))).toEqual({});
    expect(await readCliConfig(write('').file)).toEqual({});
  });

  it.each([
    { text: 'daemon_url: x\n', message: ':1: unknown key "daemon_url"' },
    { text: 'output: true\n', message: ':1: output: must be a non-empty string' },
    { text: 'output: ""\n', message: ':1: output: must be a non-empty string' },
    { text: 'output: json\noutput: yaml\n', message: ':2: (yaml)' },
    { text: 'daemon.url: [\n', message: '(yaml)' },
  ])('refuses $text with exit 2', async ({ text, message }) => {
    const { file } = write(text);
    await expect(readCliConfig(file)).rejects.toMatchObject({ exitCode: 2, message: expect.stringContaining(message) });
  });
});

describe('daemonSettings', () => {
  const home = () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'baremetal-exporter'));
    writeFileSync(join(dir, 'baremetal-exporter', 'cli.yml'), 'daemon.url: http://file:1\noutput: yaml\n');
    return dir;
  };

  it('takes the flag, then the environment, then the file', async () => {
    const XDG_CONFIG_HOME = home();
    const fromFile = await daemonSettings({}, { XDG_CONFIG_HOME });
    expect([fromFile['daemon.url']?.value, fromFile.output?.value]).toEqual(['http://file:1', 'yaml']);
    const fromEnv = await daemonSettings({}, { XDG_CONFIG_HOME, BAREMETAL_DAEMON_URL: 'http://env:2' });
    expect(fromEnv['daemon.url']).toEqual({ value: 'http://env:2', source: 'BAREMETAL_DAEMON_URL' });
    const fromFlag = await daemonSettings(
      { 'daemon.url': 'http://flag:3' },
      { XDG_CONFIG_HOME, BAREMETAL_DAEMON_URL: 'http://env:2' },
    );
    expect(fromFlag['daemon.url']).toEqual({ value: 'http://flag:3', source: '--daemon.url' });
    // An empty variable counts as unset.
    expect((await daemonSettings({}, { XDG_CONFIG_HOME, BAREMETAL_DAEMON_URL: '' }))['daemon.url']?.value).toBe(
      'http://file:1',
    );
  });

  it('refuses two token variables at once', async () => {
    await expect(
      daemonSettings({}, { XDG_CONFIG_HOME: home(), BAREMETAL_TOKEN_FILE: '/t', BAREMETAL_TOKEN: 'x' }),
    ).rejects.toMatchObject({ exitCode: 2 });
  });
});
