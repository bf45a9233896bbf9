/**
 * File faults (issue 19): every file the daemon or the CLI is given is read by one helper, a regular file or a
 * pipe of at most its kind's cap. A device (`/dev/zero`), a directory, or a pipe that does not end is refused
 * with a sentence naming the path, after reading at most the cap; a small pipe (process substitution) works.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configFromDocument, loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { readTls } from '../../src/http/tls.js';
import { loadWebConfig } from '../../src/http/web-config.js';
import { BoundedFileError, FILE_LIMITS, readBoundedFile } from '../../src/read-bounded-file.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { CLI, requireBuiltCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const DEVICE = '(a character device, not a regular file or a pipe)';
const dir = tempDir('bmx-files-', 'all');
const writers: ChildProcess[] = [];

/** A named pipe fed by `sh -c command > pipe` (the writer opens it when the reader does). */
function pipe(name: string, command: string): string {
  const path = join(dir, name);
  expect(spawnSync('mkfifo', [path]).status).toBe(0);
  const writer = spawn('sh', ['-c', `${command} > ${path}`], { stdio: 'ignore' });
  writer.on('error', () => undefined);
  writers.push(writer);
  return path;
}
afterEach(() => {
  for (const w of writers.splice(0)) w.kill('SIGKILL');
});

/** The problems of a ConfigError thrown by `fn`. */
async function problems(fn: () => unknown): Promise<string[]> {
  try {
    await fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('no ConfigError thrown');
}

describe('files the daemon reads', () => {
  it.each([
    {
      file: 'the config file is /dev/zero',
      run: () => problems(() => loadConfig('/dev/zero', {})),
      expected: [`(file): cannot read /dev/zero ${DEVICE}`],
    },
    {
      file: 'the config file is a directory',
      run: () => problems(() => loadConfig(dir, {})),
      expected: [`(file): cannot read ${dir} (a directory, not a regular file or a pipe)`],
    },
    {
      file: 'the config file is a pipe that never ends',
      run: () => problems(() => loadConfig(pipe('endless.yml', 'yes'), {})),
      expected: [`(file): cannot read ${join(dir, 'endless.yml')} (larger than ${FILE_LIMITS.config} bytes)`],
    },
    {
      file: 'the API key file is /dev/zero',
      run: () =>
        problems(() =>
          configFromDocument({ upstream: { base_url: 'https://api.example.com', api_key_file: '/dev/zero' } }, {}),
        ),
      expected: [`upstream.api_key_file: cannot read /dev/zero ${DEVICE}`],
    },
    {
      file: 'the upstream CA file is /dev/zero',
      run: () =>
        problems(() =>
          configFromDocument(
            { upstream: { base_url: 'https://api.example.com', ca_file: '/dev/zero' } },
            { BAREMETAL_API_KEY: 'k' },
          ),
        ),
      expected: [`upstream.ca_file: cannot read /dev/zero ${DEVICE}`],
    },
    {
      file: 'the database URL file is a pipe of 1 MiB',
      run: () =>
        problems(() =>
          configFromDocument(
            {
              upstream: { base_url: 'https://api.example.com' },
              database: { url_file: pipe('url', 'head -c 1048576 /dev/zero') },
            },
            { BAREMETAL_API_KEY: 'k' },
          ),
        ),
      expected: [`database.url_file: cannot read ${join(dir, 'url')} (larger than ${FILE_LIMITS.secret} bytes)`],
    },
    {
      file: 'the web config file is /dev/zero',
      run: () => problems(() => loadWebConfig('/dev/zero')),
      expected: [`web.config.file: cannot read /dev/zero ${DEVICE}`],
    },
    {
      file: 'a TLS certificate in the web config is /dev/zero',
      run: async () => {
        const path = join(dir, 'web-tls.yml');
        writeFileSync(path, 'tls_server_config: { cert_file: /dev/zero, key_file: /dev/zero }\n');
        return problems(() => loadWebConfig(path));
      },
      expected: [
        `web.config.file: tls_server_config.cert_file: cannot read /dev/zero ${DEVICE}`,
        `web.config.file: tls_server_config.key_file: cannot read /dev/zero ${DEVICE}`,
      ],
    },
    {
      file: 'web.tls files (read again on SIGHUP) are /dev/zero',
      run: async () => {
        try {
          await readTls({ certFile: '/dev/zero', keyFile: '/dev/zero' });
        } catch (error) {
          return [error instanceof BoundedFileError ? `${error.code}: ${error.message}` : String(error)];
        }
        return [];
      },
      expected: ['ENOTREGULAR: a character device, not a regular file or a pipe'],
    },
  ])('$file: refused with a sentence', async ({ run, expected }) => {
    expect(await run()).toEqual(expected);
  });

  it('a config file given as a short pipe (process substitution) is read whole', async () => {
    const yaml = join(dir, 'small.yml');
    writeFileSync(yaml, 'upstream: { base_url: https://api.example.com }\n');
    const config = await loadConfig(pipe('small-pipe.yml', `cat ${yaml}`), { BAREMETAL_API_KEY: 'k' });
    expect(config.accounts[0]?.upstream.baseUrl).toBe('https://api.example.com');
  });

  it('a regular file at the cap is read, one byte more is refused', async () => {
    const at = join(dir, 'at-cap');
    writeFileSync(at, Buffer.alloc(FILE_LIMITS.secret, 0x61));
    expect((await readBoundedFile(at, 'secret')).length).toBe(FILE_LIMITS.secret);
    writeFileSync(at, Buffer.alloc(FILE_LIMITS.secret + 1, 0x61));
    await expect(readBoundedFile(at, 'secret')).rejects.toThrow(
      `${FILE_LIMITS.secret + 1} bytes, larger than ${FILE_LIMITS.secret} bytes`,
    );
  });
});

describe('--post-install: the 256 KiB cap holds for every source, nothing is sent', () => {
  let sim: Simulator;
  beforeAll(async () => {
    requireBuiltCli();
    sim = await startSimulator({ apiKey: 'k', servers: 1, attackRate: 0 });
  });
  afterAll(() => sim?.close());

  /** Runs `api provision … --post-install SOURCE` through bash, so that SOURCE may be `<(…)`. */
  const provision = (source: string) =>
    spawnSync(
      'bash',
      [
        '-c',
        `"${process.execPath}" "${CLI}" api provision 100001 --os 1 --yes --show-password --post-install ${source}`,
      ],
      { env: { ...process.env, BAREMETAL_API_URL: sim.url, BAREMETAL_API_KEY: 'k' }, encoding: 'utf8' },
    );

  it.each([
    {
      source: '/dev/zero',
      stderr: `baremetal-exporter api: --post-install: cannot read /dev/zero ${DEVICE}\n`,
    },
    {
      source: '<(yes echo)',
      stderr:
        /^baremetal-exporter api: --post-install: \/dev\/fd\/\d+ is more than 262144 bytes \(read from a pipe\); at most 262144\n$/,
    },
  ])('$source: exit 2', ({ source, stderr }) => {
    const result = provision(source);
    expect({ code: result.status, stderr: result.stderr }).toEqual({
      code: 2,
      stderr: typeof stderr === 'string' ? stderr : expect.stringMatching(stderr),
    });
    expect(sim.calls).toEqual([]);
  });
});
