/**
 * Every command and subcommand of the command line answers `--help` and `-h` with its usage on stdout (exit 0),
 * and refuses an unknown option or a malformed call with exit 2 (issue 51). The commands are walked from the
 * one list the CLI dispatches over (cli/commands.ts) and the command words shell completion offers below each
 * (cli/completion.ts, built from each command's own table), so a new command or subcommand is covered without
 * editing this test. In process: `runProgram` is what the built CLI runs (cli/main.ts adds only the process's
 * wiring, tested on the built CLI in test/integration/cli-conventions.test.ts).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { COMMANDS } from '../../../src/cli/commands.js';
import { completionTable } from '../../../src/cli/completion.js';
import { exitCodeOfThrown, runProgram } from '../../../src/cli/program.js';
import { tempDir } from '../../helpers/tmp.js';

/** Every command path: the top-level commands and each command word completion offers below them. */
function commandPaths(): string[][] {
  const table = new Map(completionTable());
  const paths: string[][] = [];
  const walk = (path: string[]) => {
    paths.push(path);
    for (const word of table.get(path.join(' ')) ?? []) if (!word.startsWith('-')) walk([...path, word]);
  };
  for (const command of COMMANDS) walk([command]);
  return paths;
}

/** Runs `argv` as the CLI would: what it printed and its exit code. */
async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  let code: number;
  try {
    process.exitCode = undefined;
    await runProgram(argv);
    code = Number(process.exitCode ?? 0);
  } catch (error) {
    stderr += `baremetal-exporter: ${(error as Error).message}\n`;
    code = exitCodeOfThrown(error);
  } finally {
    out.mockRestore();
    err.mockRestore();
    process.exitCode = undefined;
  }
  return { code, stdout, stderr };
}

// No CLI config file or daemon settings of the machine's user: only the arguments count.
const saved = { ...process.env };
beforeEach(() => {
  const home = tempDir();
  Object.assign(process.env, { HOME: home, XDG_CONFIG_HOME: `${home}/.config` });
  for (const name of ['BAREMETAL_DAEMON_URL', 'BAREMETAL_TOKEN_FILE', 'BAREMETAL_TOKEN', 'BAREMETAL_OUTPUT'])
    delete process.env[name];
});
afterEach(() => {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
});

const PATHS = commandPaths();

describe('the commands walked', () => {
  it('are every command and subcommand', () => {
    const named = PATHS.map((p) => p.join(' '));
    for (const p of [
      'run',
      'demo',
      'check-config',
      'simulate',
      'completion bash',
      'remediation test',
      'remediation replay',
      'actions withdraw',
      'circuit status',
      'api power cycle',
    ])
      expect(named).toContain(p);
  });
});

describe.each(PATHS.map((path) => ({ path, name: path.join(' ') })))('$name', ({ path }) => {
  it.each(['--help', '-h'])('answers %s with its usage on stdout, exit 0', async (flag) => {
    const res = await cli([...path, flag]);
    expect(res.stderr).toBe('');
    expect(res.stdout).toMatch(/^Usage:/m);
    expect(res.code).toBe(0);
  });

  it('refuses an unknown option: exit 2, the reason on stderr', async () => {
    const res = await cli([...path, '--no-such-option']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^baremetal-exporter\b.*(no-such-option|unknown|expected|supported)/im);
  });
});

describe('usage errors exit 2', () => {
  it.each([
    { args: ['remediation', 'replay', 'nogate.yml'], says: "Unexpected argument 'nogate.yml'" },
    { args: ['remediation'], says: 'expected a subcommand' },
    { args: ['remediation', 'test'], says: 'at least one FILE' },
    { args: ['remediation', 'replay', '--config.file', 'x.yml', '--since', 'a week'], says: '--since must be' },
    { args: ['check-config'], says: 'exactly one FILE' },
    { args: ['check-config', 'a.yml', '--config.file', 'b.yml'], says: 'exactly one FILE' },
    { args: ['run'], says: '--config.file=FILE is required' },
    { args: ['actions'], says: 'expected a command' },
    { args: ['actions', 'show', 'x'], says: "ID must be a journal entry's number" },
    { args: ['actions', 'show'], says: 'expected one journal entry ID' },
    { args: ['actions', 'deny', '1'], says: '--reason TEXT is required' },
    { args: ['actions', 'list', '--limit', '0'], says: '--limit: a whole number' },
    { args: ['actions', 'list', '-o', 'xml'], says: '--output: must be one of' },
    { args: ['circuit', 'close'], says: '--reason TEXT is required' },
    { args: ['circuit', 'status', 'extra'], says: 'takes no arguments' },
    { args: ['demo', '--simulator.port', 'x'], says: '--simulator.port: a port' },
    { args: ['demo', '--port', '70000'], says: '--port: a port' },
    { args: ['simulate', '--attack-rate', '0.1', '--attacks-per-hour', '0.1'], says: 'give one' },
    { args: ['completion', 'zsh'], says: 'the supported shell is bash' },
    { args: ['api', 'power'], says: 'a command is required' },
  ])('$args', async ({ args, says }) => {
    const res = await cli(args);
    expect(res.stderr).toContain(says);
    expect(res.code).toBe(2);
  });

  it('an unknown command prints the usage and exits 2', async () => {
    const res = await cli(['nonsense']);
    expect(res.stdout).toMatch(/^baremetal-exporter /);
    expect(res.code).toBe(2);
  });
});
