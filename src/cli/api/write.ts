/**
 * The one path every write takes: validate by planning the request (dry-run client), print it and stop
 * for `--dry-run`, run checks that need the API (reads), check the daemon's shared state (a power write: the
 * breaker and the cap; refused unless `--force`), ask for confirmation, then send — journaled as a `cli` action
 * when the daemon's journal is there, so its budget and cooldowns see it. The outcome is what the API said: a
 * reply with `success: false` is a failure.
 */
import { userInfo } from 'node:os';
import { callAndComplete } from '../../remediation/execute.js';
import { journalRow } from '../../store/rows.js';
import type { StateQueries } from '../../store/store.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { ActionResult } from '../../upstream/decode.js';
import { confirm } from './confirm.js';
import { flag, type CommandContext } from './context.js';
import { plan, type PlannedRequest } from './dry-run.js';
import { refused } from './exit.js';
import { keyValues, type Rendered } from './output.js';

export interface WriteAction<T> {
  /** journal `action` (the daemon's names where they exist: powercycle, firewall_state, …) */
  action: string;
  serverId: string;
  ip?: string;
  /** the value asked for (firewall state, sensitivity, OS id, PTR hostname, cancellation type) */
  value?: string;
  /** when set, the write needs confirmation: what it does, e.g. "power off server 100001" */
  confirm?: string;
  /** the upstream call (one of src/upstream/*) */
  call: (client: UpstreamClient) => Promise<T>;
  /** local checks after the request was validated; run for --dry-run too */
  validate?: () => void;
  /** checks after validation and before confirmation; not run for --dry-run (it sends nothing) */
  before?: () => Promise<void>;
  /**
   * the daemon's shared state this write must pass (power: power-guard.ts): why it must not be sent, or
   * undefined. Checked before confirmation and again in the transaction that journals the row; a refusal exits 3
   * unless `--force` (the row then `forced`). Without a journal there is no state to read: not checked.
   */
  guard?: (q: StateQueries, now: number) => Promise<string | undefined>;
  /** wraps the journaled send (the firewall window's wait-and-retry) */
  around?: (send: () => Promise<T>) => Promise<T>;
}

export type WriteOutcome<T> = { planned: PlannedRequest } | { result: T };

/** A dry run's output: the request that would be sent (path and parameters, never the key). */
export function renderPlanned(planned: PlannedRequest): Rendered {
  return {
    data: { dryRun: true, operation: planned.operation, method: 'POST', path: planned.path, params: planned.params },
    table: `dry run: nothing sent; would send ${planned.operation}: POST ${planned.path}\n${keyValues(Object.entries(planned.params))}`,
  };
}

/** Runs `write` as described above. Throws CliExit (refusals), InvalidParameterError, UpstreamError. */
export async function runWrite<T>(ctx: CommandContext, write: WriteAction<T>): Promise<WriteOutcome<T>> {
  const planned = await plan(ctx.client.baseUrl, write.call);
  write.validate?.();
  if (flag(ctx, 'dry-run')) return { planned };
  await write.before?.();
  if (write.guard !== undefined) await checkGuard(ctx, write, await ctx.store());
  if (write.confirm !== undefined) {
    await confirm({
      what: write.confirm,
      serverId: write.serverId,
      yes: flag(ctx, 'yes'),
      interactive: ctx.io.stdinIsTTY,
      input: ctx.io.stdin,
      output: ctx.io.stderr,
    });
  }
  const send = () => journaled(ctx, write, planned.operation);
  return { result: await (write.around ? write.around(send) : send()) };
}

/**
 * The journal's principal for the `api` command: `cli:<login name>` (os.userInfo), or `cli:uid-<uid>` when the
 * user has no name (a container's numeric user without a passwd entry).
 */
export function cliPrincipal(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return `cli:uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

/**
 * Runs `write.guard` on `q` (the journal, or the transaction that journals the row): a refusal throws CliExit
 * (exit 3) unless `--force`, which gets back the refusal it goes past.
 */
async function checkGuard<T>(
  ctx: CommandContext,
  write: WriteAction<T>,
  q: StateQueries | undefined,
): Promise<string | undefined> {
  if (write.guard === undefined || q === undefined) return undefined;
  const refusal = await write.guard(q, ctx.io.now());
  if (refusal === undefined || flag(ctx, 'force')) return refusal;
  throw refused(`${write.action} ${write.serverId} refused: ${refusal}; --force sends it anyway (journaled as forced)`);
}

async function journaled<T>(ctx: CommandContext, write: WriteAction<T>, _operation: string): Promise<T> {
  const store = await ctx.store();
  const forced = write.guard !== undefined && flag(ctx, 'force');
  let past: string | undefined;
  const row = () =>
    journalRow({
      account: ctx.account,
      createdAt: ctx.io.now(),
      source: 'cli',
      action: write.action,
      serverId: write.serverId,
      ip: write.ip ?? null,
      value: write.value ?? null,
      decision: 'executing',
      principal: cliPrincipal(),
      forced,
    });
  // A guarded write is checked and journaled in one transaction, as the daemon decides: no other decision of
  // the account comes between the check and the row that counts toward the next one.
  const id =
    store === undefined
      ? undefined
      : write.guard === undefined
        ? await store.insert(row())
        : await store.transaction(ctx.account, async (tx) => {
            past = await checkGuard(ctx, write, tx);
            return tx.insert(row());
          });
  const note = (message: string | null) =>
    past === undefined ? message : `forced (--force) past: ${past}; ${message ?? ''}`;
  if (past !== undefined) ctx.io.stderr.write(`baremetal-exporter api: warning: sent with --force past: ${past}\n`);
  // The action functions throw unless the API confirmed the action (decodeActionResult).
  const sent = await callAndComplete({
    call: () => write.call(ctx.client),
    message: (result) => {
      const text = (result as Partial<ActionResult>)?.message;
      return typeof text === 'string' ? text : '';
    },
    complete: async (done) => {
      if (id !== undefined) await store!.complete(id, { ...done, message: note(done.message) });
    },
    now: ctx.io.now,
  });
  if (!('result' in sent)) throw sent.error;
  return sent.result;
}

/** A write whose reply is an ActionResult: runs it and renders the API's message (or the dry run). */
export async function runAction(ctx: CommandContext, write: WriteAction<ActionResult>): Promise<Rendered> {
  const outcome = await runWrite(ctx, write);
  if ('planned' in outcome) return renderPlanned(outcome.planned);
  const data = {
    action: write.action,
    serverId: write.serverId,
    ...(write.ip ? { ip: write.ip } : {}),
    ...(write.value ? { value: write.value } : {}),
    success: true,
    message: outcome.result.message,
  };
  return {
    data,
    table: `${write.action} ${write.serverId}${write.ip ? ` ${write.ip}` : ''}: ${outcome.result.message || 'done'}`,
  };
}
