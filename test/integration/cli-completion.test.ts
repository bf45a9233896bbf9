/** The bash completion script, generated from the command tree, run in a real bash. */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { bashCompletion } from '../../src/cli/completion.js';

/** COMPREPLY for the command line `words` (the last word is the one being completed). */
function complete(words: string[]): string[] {
  const script = `${bashCompletion()}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _baremetal_exporter; printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync('bash', ['-c', script], { encoding: 'utf8', timeout: 10_000 }).split('\n').filter(Boolean).sort();
}

describe('completion bash', () => {
  it('passes bash -n', () => {
    expect(() => execFileSync('bash', ['-n'], { input: bashCompletion(), timeout: 10_000 })).not.toThrow();
  });

  it.each([
    {
      name: 'top-level commands',
      words: ['baremetal-exporter', ''],
      has: ['api', 'actions', 'circuit', 'completion', 'run'],
      not: ['list'],
    },
    {
      name: 'api commands',
      words: ['baremetal-exporter', 'api', ''],
      has: ['servers', 'power', 'firewall', 'provision', 'cancellation'],
      not: ['run'],
    },
    { name: 'a prefix', words: ['baremetal-exporter', 'api', 'po'], has: ['power'], not: ['provision'] },
    {
      name: 'remediation commands',
      words: ['baremetal-exporter', 'remediation', ''],
      has: ['test', 'replay'],
      not: ['run'],
    },
    { name: 'power actions', words: ['baremetal-exporter', 'api', 'power', ''], has: ['cycle', 'on', 'off'], not: [] },
    {
      name: 'options of a write',
      words: ['baremetal-exporter', 'api', 'power', 'off', '100001', '--'],
      has: ['--dry-run', '--yes', '--output'],
      not: ['--wait'],
    },
    {
      name: 'service types',
      words: ['baremetal-exporter', 'api', 'firewall', 'history', ''],
      has: ['dedicated', 'colocation', 'transit'],
      not: [],
    },
    {
      name: '--output values',
      words: ['baremetal-exporter', 'api', 'servers', 'list', '--output', ''],
      has: ['json', 'table', 'yaml'],
      not: [],
    },
    {
      name: 'graph types after a value option',
      words: ['baremetal-exporter', 'api', 'graph', '1', '--scale', 'day', '--type', ''],
      has: ['port_bits', 'port_upkts'],
      not: [],
    },
    {
      name: 'sensitivity levels',
      words: ['baremetal-exporter', 'api', 'firewall', 'sensitivity', '100001', '198.18.0.1', ''],
      has: ['high', 'low'],
      not: [],
    },
    {
      name: 'actions commands',
      words: ['baremetal-exporter', 'actions', ''],
      has: ['list', 'show', 'approve', 'deny', 'withdraw'],
      not: ['run'],
    },
    {
      name: 'actions list options, after a value option',
      words: ['baremetal-exporter', 'actions', 'list', '--decision', 'awaiting_approval', '--'],
      has: ['--approver', '--principal', '--daemon.url', '--token.file', '--limit'],
      not: ['--reason'],
    },
    {
      name: 'actions approve options after its ID',
      words: ['baremetal-exporter', 'actions', 'approve', '12', '--'],
      has: ['--reason', '--tls.ca-file'],
      not: ['--decision'],
    },
    { name: 'circuit commands', words: ['baremetal-exporter', 'circuit', ''], has: ['status', 'close'], not: [] },
    {
      name: 'circuit close options',
      words: ['baremetal-exporter', 'circuit', 'close', '--'],
      has: ['--account', '--reason', '--daemon.url'],
      not: ['--web.telemetry-path'],
    },
    {
      name: '-o values of actions',
      words: ['baremetal-exporter', 'actions', 'list', '-o', ''],
      has: ['json', 'table'],
      not: [],
    },
    { name: 'completion shells', words: ['baremetal-exporter', 'completion', ''], has: ['bash'], not: [] },
  ])('$name', ({ words, has, not }) => {
    const got = complete(words);
    for (const w of has) expect(got).toContain(w);
    for (const w of not) expect(got).not.toContain(w);
  });
});
