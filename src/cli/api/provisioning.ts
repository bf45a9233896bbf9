/**
 * The provisioning commands of `baremetal-exporter api`: `provision` (install an OS, wiping the disks; an
 * optional post-install script; where the root password goes) and `cancellation` (schedule or withdraw a
 * server's cancellation). Both ask for confirmation; commands.ts lists them with the other leaves.
 */
import { closeSync, lstatSync, openSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { CANCELLATION_TYPES } from '../../config/api-terms.js';
import { BoundedFileError, FILE_LIMITS, readBoundedFile, readProblem } from '../../read-bounded-file.js';
import { listOperatingSystems, provision } from '../../upstream/dedicated.js';
import { setCancellation } from '../../upstream/reseller.js';
import { flag, option, requiredOption, type CommandContext } from './context.js';
import { refused, usage } from './exit.js';
import type { Leaf } from './leaf.js';
import type { Rendered } from './output.js';
import { renderPlanned, runAction, runWrite } from './write.js';

/** Largest post-install script read, bytes. */
export const MAX_SCRIPT_BYTES = FILE_LIMITS.script;

/**
 * Checks where provisioning's root password will go, before anything is sent: a new file (not even a broken
 * symbolic link there) in a folder that exists. Throws CliExit (exit 3) with a sentence naming the path.
 */
function passwordDestination(ctx: CommandContext): { file?: string; show: boolean } {
  const file = option(ctx, 'password-file');
  const show = flag(ctx, 'show-password') || (file === undefined && ctx.io.stdoutIsTTY);
  if (file !== undefined) {
    // lstat, not exists: a dangling symbolic link would be followed by the write (and then EEXIST).
    const there = lstatSync(file, { throwIfNoEntry: false });
    if (there?.isSymbolicLink())
      throw refused(`--password-file ${file} is a symbolic link; refusing to write through it (nothing was sent)`);
    if (there) throw refused(`--password-file ${file} exists; refusing to overwrite it (nothing was sent)`);
    const folder = dirname(file);
    if (!statSync(folder, { throwIfNoEntry: false })?.isDirectory())
      throw refused(`--password-file ${file}: the folder ${folder} does not exist (nothing was sent)`);
  }
  if (file === undefined && !show) {
    throw refused(
      'the root password needs a place: --password-file FILE, a terminal on stdout, or --show-password (nothing was sent)',
    );
  }
  return { ...(file !== undefined ? { file } : {}), show };
}

/** Creates the password file (0600, never an existing one); a failure is a sentence naming the path (exit 3). */
function claimPasswordFile(file: string): number {
  try {
    return openSync(file, 'wx', 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw refused(`--password-file ${file} cannot be created (${code}); nothing was sent`);
  }
}

/**
 * The text of a post-install script from its bytes: UTF-8 without NUL bytes (a BASH script, not a binary).
 * Throws CliExit (exit 2) naming `path` otherwise.
 */
export function scriptText(path: string, bytes: Uint8Array): string {
  if (bytes.includes(0))
    throw usage(`--post-install: ${path} is a binary file (it holds NUL bytes), not a BASH script`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw usage(`--post-install: ${path} is not UTF-8 text; a post-install script must be a UTF-8 BASH script`);
  }
}

/** The script at `path`: a regular file or a pipe (`<(…)`), at most MAX_SCRIPT_BYTES from every source, as UTF-8 text. */
async function readScript(path: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readBoundedFile(path, 'script');
  } catch (error) {
    if (error instanceof BoundedFileError && error.code === 'EFBIG')
      throw usage(
        error.size === undefined
          ? `--post-install: ${path} is more than ${MAX_SCRIPT_BYTES} bytes (read from a pipe); at most ${MAX_SCRIPT_BYTES}`
          : `--post-install: ${path} is ${error.size} bytes; at most ${MAX_SCRIPT_BYTES}`,
      );
    throw usage(`--post-install: cannot read ${path} (${readProblem(error)})`);
  }
  return scriptText(path, bytes);
}

async function runProvision(ctx: CommandContext): Promise<Rendered> {
  const serverId = ctx.args[0]!;
  const osid = requiredOption(ctx, 'os');
  const scriptPath = option(ctx, 'post-install');
  const postInstallation = scriptPath === undefined ? undefined : await readScript(scriptPath);
  let dest: { file?: string; show: boolean } = { show: false };
  let fd: number | undefined;
  const outcome = await runWrite(ctx, {
    action: 'provision',
    serverId,
    value: osid,
    confirm: `install OS ${osid} on server ${serverId}, wiping its disks`,
    call: (c) => provision(c, { serverId, osid, ...(postInstallation !== undefined ? { postInstallation } : {}) }),
    validate: () => {
      dest = passwordDestination(ctx);
    },
    before: async () => {
      const known = await listOperatingSystems(ctx.client);
      if (!known.some((os) => os.id === osid))
        throw usage(
          `provision: --os ${osid} is not in the API's OS list (${known.map((os) => os.id).join(', ')}); see "api os list"`,
        );
    },
    around: async (send) => {
      // Claim the file before the disk is wiped: created now (0600, never an existing one), filled after.
      if (dest.file !== undefined) fd = claimPasswordFile(dest.file);
      try {
        return await send();
      } catch (error) {
        if (fd !== undefined) closeSync(fd);
        fd = undefined;
        throw error;
      }
    },
  });
  if ('planned' in outcome) return renderPlanned(outcome.planned);
  const password = outcome.result.rootPassword;
  if (fd !== undefined) {
    writeSync(fd, `${password}\n`);
    closeSync(fd);
  }
  const data = {
    action: 'provision',
    serverId,
    osid,
    success: true,
    ...(dest.file !== undefined ? { passwordFile: dest.file } : {}),
    ...(dest.show ? { rootPassword: password } : {}),
  };
  const lines = [`provision ${serverId}: OS ${osid} is being installed`];
  if (password === '') lines.push('the API returned no root password');
  else {
    if (dest.file !== undefined) lines.push(`root password written to ${dest.file} (mode 0600)`);
    if (dest.show) lines.push(`root password (shown once): ${password}`);
  }
  return { data, table: lines.join('\n') };
}

/** `api provision SERVER_ID --os OS_ID`: the OS install, its post-install script and root password. */
export const PROVISION: Leaf = {
  path: ['provision'],
  args: ['SERVER_ID'],
  synopsis: '--os OS_ID [--post-install SCRIPT.sh] [--password-file FILE]',
  options: ['os', 'post-install', 'password-file', 'show-password'],
  write: true,
  summary: 'install an OS, wiping the disks (asks for confirmation)',
  example: 'baremetal-exporter api provision 100001 --os 1 --post-install setup.sh --password-file root.pw',
  run: runProvision,
};

/** `api cancellation SERVER_ID immediate|end|delete`: schedules or withdraws a server's cancellation. */
export const CANCELLATION: Leaf = {
  path: ['cancellation'],
  args: ['SERVER_ID', CANCELLATION_TYPES.join('|')],
  options: [],
  write: true,
  summary: 'schedule (immediate, end of billing cycle) or withdraw (delete) cancellation',
  example: 'baremetal-exporter api cancellation 100001 end --yes',
  run: (ctx) => {
    const [serverId, type] = ctx.args as [string, string];
    const confirmWhat =
      type === 'immediate'
        ? `cancel server ${serverId} immediately`
        : type === 'end'
          ? `cancel server ${serverId} at the end of its billing cycle`
          : undefined;
    return runAction(ctx, {
      action: 'cancellation',
      serverId,
      value: type,
      call: (c) => setCancellation(c, serverId, type as never),
      ...(confirmWhat ? { confirm: confirmWhat } : {}),
    });
  },
};
