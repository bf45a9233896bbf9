/**
 * A remediation engine that acts on nothing, for `remediation test` and `remediation replay`: the real engine
 * and guards over an in-memory SQLite journal, a fake clock, and a recorder in place of the API (it records
 * each write and answers `{success: true}`; nothing leaves the process).
 */
import { tmpdir } from 'node:os';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Config } from '../config/types.js';
import { createMetrics } from '../metrics/definitions.js';
import { type EngineDeps, RemediationEngine } from '../remediation/engine.js';
import type { TargetDirectory } from '../remediation/types.js';
import { schedulePeriodMs } from '../polls/poll.js';
import { Journal } from '../store/sqlite/journal.js';
import { type SqliteStore, sqliteStore } from '../store/sqlite/store.js';
import { type ReplyDecoder, UpstreamClient } from '../upstream/client.js';
import type { UpstreamRequest } from '../upstream/request.js';

/** An UpstreamClient that sends nothing: it records each write (operation and form fields) and answers success. */
export class RecorderClient extends UpstreamClient {
  readonly calls: Array<Record<string, string>> = [];
  constructor() {
    super({ baseUrl: 'http://127.0.0.1:9', apiKey: '', timeoutMs: 1, concurrency: 1, retries: 0 });
  }
  override async json<T>(req: UpstreamRequest, decode?: ReplyDecoder<T>): Promise<T> {
    const params: Record<string, string> = { operation: req.operation };
    for (const [k, v] of Object.entries(req.body)) if (v !== undefined) params[k] = String(v);
    this.calls.push(params);
    const reply = { success: true, message: 'recorded, not sent' };
    return decode ? decode(reply, { operation: req.operation, path: req.path }, this.scrub) : (reply as T);
  }
}

export interface OfflineEngine {
  engine: RemediationEngine;
  store: SqliteStore;
  client: RecorderClient;
  /** stops the engine, closes the journal and the client */
  close(): Promise<void>;
}

/** An engine of `account` under `config` (remediation and schedules) on `targets`, with the clock `now`. */
export async function offlineEngine(
  config: Pick<Config, 'remediation' | 'schedules'>,
  account: string,
  targets: TargetDirectory,
  now: () => number,
  /** the Alertmanager the engine reads and silences (a test file's stated alerts); absent: none */
  alertmanager?: EngineDeps['alertmanager'],
  /**
   * a replay's verifier: the Alertmanager it reads as evidence instead of `alertmanager` (which then answers
   * the outage gate only), and how often it runs at most (ms)
   */
  verifier?: { alertList: NonNullable<EngineDeps['alertList']>; everyMs: number },
): Promise<OfflineEngine> {
  const store = sqliteStore(Journal.open(':memory:'), ':memory:', tmpdir());
  const client = new RecorderClient();
  const engine = new RemediationEngine({
    account,
    store,
    client,
    metrics: createMetrics(new Registry()),
    logger: pino({ level: 'silent' }),
    targets,
    config: config.remediation,
    firewallPeriodMs: () => schedulePeriodMs(config.schedules.firewall),
    now,
    ...(alertmanager ? { alertmanager } : {}),
    ...(verifier ? { alertList: verifier.alertList, verifyEveryMs: verifier.everyMs } : {}),
  });
  await engine.ready;
  return {
    engine,
    store,
    client,
    close: async () => {
      await engine.stop();
      await store.close();
      await client.close();
    },
  };
}
