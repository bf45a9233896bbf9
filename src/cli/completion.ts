/**
 * `baremetal-exporter completion bash`: a bash completion script generated from the command tree, so it
 * never drifts from the commands. Completes command words, the enum positionals and option names and the
 * values of --output, --type and --scale. Install: `source <(baremetal-exporter completion bash)`.
 */
import type { Writable } from 'node:stream';
import {
  CANCELLATION_TYPES,
  FIREWALL_STATES,
  GRAPH_SCALES,
  GRAPH_TYPES,
  SENSITIVITIES,
  SERVICE_TYPES,
} from '../config/api-terms.js';
import { ACTIONS_SUBCOMMANDS, ACTIONS_VALUE_OPTIONS, actionsOptions } from './actions.js';
import { OPTIONS, optionsOf } from './api/main.js';
import { CIRCUIT_SUBCOMMANDS, CIRCUIT_VALUE_OPTIONS, circuitOptions } from './circuit.js';
import { LEAVES } from './api/commands.js';
import { EXIT, usage, oneLine, exitCodeOf } from './api/exit.js';
import { OUTPUT_FORMATS } from './api/output.js';
import { asksHelp, COMMANDS } from './commands.js';

/** The top-level words: the commands main.ts dispatches over, and its own flags. */
const TOP = [...COMMANDS, '--help', '--version'];

/** `completion --help`. */
export const COMPLETION_HELP = `Usage: baremetal-exporter completion bash

Prints a bash completion script generated from the command tree. Install: source <(baremetal-exporter completion bash)
`;

/**
 * Words offered after a prefix of non-option words (longest prefix wins): every command word and option the
 * command line knows, which the docs test checks the pages against.
 */
export function completionTable(): Array<[string, string[]]> {
  const entries = new Map<string, Set<string>>([
    ['', new Set(TOP)],
    ['completion', new Set(['bash', '--help'])],
    ['remediation', new Set(['test', 'replay', '--help'])],
    ['remediation test', new Set(['--help'])],
    ['remediation replay', new Set(['--config.file', '--since', '--output', '-o', '--exit-code', '--help'])],
  ]);
  const add = (prefix: string[], words: readonly string[]) => {
    const key = prefix.join(' ');
    const set = entries.get(key) ?? new Set<string>();
    for (const w of words) set.add(w);
    entries.set(key, set);
  };
  add(['api'], ['--help']);
  add(['actions'], [...ACTIONS_SUBCOMMANDS, '--help']);
  for (const sub of ACTIONS_SUBCOMMANDS) add(['actions', sub], actionsOptions(sub));
  add(['circuit'], [...CIRCUIT_SUBCOMMANDS, '--help']);
  for (const sub of CIRCUIT_SUBCOMMANDS) add(['circuit', sub], circuitOptions(sub));
  for (const leaf of LEAVES) {
    const path = ['api', ...leaf.path];
    for (let i = 1; i < path.length; i++) add(path.slice(0, i), [path[i]!]);
    add(
      path,
      optionsOf(leaf).map((o) => `--${o}`),
    );
  }
  // Enum positionals right after a command's path.
  add(['api', 'firewall', 'history'], SERVICE_TYPES);
  add(['api', 'cancellation'], CANCELLATION_TYPES);
  return [...entries].map(([k, v]) => [k, [...v]] as [string, string[]]).sort((a, b) => b[0].length - a[0].length);
}

/** Values of options that take a fixed set (after `--output`, `--type`, `--scale`). */
const VALUES: Record<string, readonly string[]> = {
  '--output': OUTPUT_FORMATS,
  '-o': OUTPUT_FORMATS,
  '--type': GRAPH_TYPES,
  '--scale': [...new Set([...GRAPH_SCALES, 'hour'])],
};

/** Values completed at the last positional of these commands. */
const LAST_ARG: Array<[string, readonly string[]]> = [
  ['api firewall sensitivity', SENSITIVITIES],
  ['api firewall state', FIREWALL_STATES],
];

/** The bash completion script. */
export function bashCompletion(): string {
  // The options that take a value, whose value is no command word: the api command's and the daemon client's.
  const daemonValueOptions = [...ACTIONS_VALUE_OPTIONS, ...CIRCUIT_VALUE_OPTIONS];
  const valueOptions = [
    ...new Set([
      ...Object.entries(OPTIONS).flatMap(([name, o]) =>
        o.type === 'string' ? [`--${name}`, ...(o.short ? [`-${o.short}`] : [])] : [],
      ),
      ...daemonValueOptions,
    ]),
  ];
  const arms = completionTable().map(
    ([prefix, words]) => `    ${prefix === '' ? "''" : `'${prefix}'|'${prefix} '*`}) words='${words.join(' ')}' ;;`,
  );
  const valueArms = Object.entries(VALUES).map(
    ([opt, words]) => `    ${opt}) COMPREPLY=($(compgen -W '${words.join(' ')}' -- "$cur")); return ;;`,
  );
  const lastArms = LAST_ARG.map(([prefix, words]) => `    '${prefix} '*' '*) words='${words.join(' ')}' ;;`);
  return `# bash completion for baremetal-exporter; install: source <(baremetal-exporter completion bash)
_baremetal_exporter() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path='' words='' i w skip=0
  case "$prev" in
${valueArms.join('\n')}
  esac
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if ((skip)); then skip=0; continue; fi
    case " ${valueOptions.join(' ')} " in *" $w "*) skip=1; continue ;; esac
    [[ $w == -* ]] && continue
    path="\${path:+$path }$w"
  done
  case "$path" in
${lastArms.join('\n')}
${arms.join('\n')}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _baremetal_exporter baremetal-exporter
`;
}

/** Runs `completion <shell>`; resolves with the exit code. */
export async function runCompletion(
  args: string[],
  io: { stdout: Writable; stderr: Writable } = process,
): Promise<number> {
  try {
    if (asksHelp(args)) {
      io.stdout.write(COMPLETION_HELP);
      return EXIT.ok;
    }
    if (args.length !== 1 || args[0] !== 'bash')
      throw usage('completion: the supported shell is bash: "baremetal-exporter completion bash"');
    io.stdout.write(bashCompletion());
    return EXIT.ok;
  } catch (error) {
    io.stderr.write(`baremetal-exporter: ${oneLine(error)}\n`);
    return exitCodeOf(error);
  }
}
