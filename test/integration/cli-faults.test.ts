/**
 * The command line's side of the fault matrix (issue 19): the built CLI against the simulator, with inputs
 * a careless operator gives. Each ends in one sentence on stderr with the documented exit code (2 usage or
 * validation, 3 refused by a safety check), and the simulator's record of calls shows nothing was sent.
 */
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'cli-faults-key-51c0e7a2b9';
let sim: Simulator;
const dir = tempDir('bmx-cli-faults-', 'all');

beforeAll(async () => {
  sim = await startSimulator({ apiKey: KEY, servers: 2, colocations: 1, transits: 1, attackRate: 0 });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.calls.length = 0;
});

const api = (args: string[]) => runCli(['api', ...args], { BAREMETAL_API_URL: sim.url, BAREMETAL_API_KEY: KEY });

// 200 KiB of this Node binary: under the 256 KiB cap, full of NUL bytes, more than a pipe holds.
const binary = join(dir, 'binary.sh');
writeFileSync(binary, readFileSync(process.execPath).subarray(0, 200 * 1024));
const latin1 = join(dir, 'latin1.sh');
writeFileSync(latin1, Buffer.from('#!/bin/bash\necho caf\xe9\n', 'latin1'));
const dangling = join(dir, 'dangling.pw');
symlinkSync(join(dir, 'no-such-target'), dangling);
const provision = (...more: string[]) => ['provision', '100001', '--os', '1', '--yes', ...more];

describe('CLI faults: one sentence, the documented exit code, nothing sent', () => {
  it.each([
    {
      name: 'a binary --post-install script',
      args: provision('--post-install', binary, '--show-password'),
      code: 2,
      err: `--post-install: ${binary} is a binary file (it holds NUL bytes), not a BASH script`,
    },
    {
      name: 'a --post-install script that is not UTF-8',
      args: provision('--post-install', latin1, '--show-password'),
      code: 2,
      err: `--post-install: ${latin1} is not UTF-8 text; a post-install script must be a UTF-8 BASH script`,
    },
    {
      name: 'a server id with a shell metacharacter',
      args: ['servers', 'show', '100001;id'],
      code: 2,
      err: 'servers show: SERVER_ID must be an id as the API gives them: a letter or digit, then up to 63 letters, digits, _ . : or - (got "100001;id")',
    },
    {
      name: 'a path as a service id',
      args: ['firewall', 'history', 'colocation', '../../x'],
      code: 2,
      err: 'firewall history: ID must be an id as the API gives them: a letter or digit, then up to 63 letters, digits, _ . : or - (got "../../x")',
    },
    {
      name: 'a path as a server id of a write',
      args: ['power', 'cycle', '../../x', '--yes'],
      code: 2,
      err: 'power cycle: SERVER_ID must be an id as the API gives them: a letter or digit, then up to 63 letters, digits, _ . : or - (got "../../x")',
    },
    {
      name: 'an OS id with a shell metacharacter',
      args: ['provision', '100001', '--os', '1;reboot', '--yes', '--show-password'],
      code: 2,
      err: 'provision: --os must be an id as the API gives them: a letter or digit, then up to 63 letters, digits, _ . : or - (got "1;reboot")',
    },
    {
      name: 'an IP that is not one',
      args: ['firewall', 'state', '100001', '10.0.0.1;id', '1', '--yes'],
      code: 2,
      err: 'firewall state: invalid parameter "ip": must be an IPv4 or IPv6 address (got "10.0.0.1;id")',
    },
    {
      name: '--password-file in a folder that does not exist',
      args: provision('--password-file', join(dir, 'missing', 'root.pw')),
      code: 3,
      err: `--password-file ${join(dir, 'missing', 'root.pw')}: the folder ${join(dir, 'missing')} does not exist (nothing was sent)`,
    },
    {
      name: '--password-file through a dangling symbolic link',
      args: provision('--password-file', dangling),
      code: 3,
      err: `--password-file ${dangling} is a symbolic link; refusing to write through it (nothing was sent)`,
    },
  ])('$name → exit $code', async ({ args, code, err }) => {
    const r = await api(args);
    expect({ code: r.code, stderr: r.stderr, stdout: r.stdout, calls: sim.calls }).toEqual({
      code,
      stderr: `baremetal-exporter api: ${err}\n`,
      stdout: '',
      calls: [],
    });
  });
});
