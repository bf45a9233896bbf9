import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { AlertmanagerClient } from '../../src/alertmanager/client.js';
import { captureLogger } from './logger.js';
import { tempDir } from './tmp.js';
import { eventually, freePort, startProcess } from './processes.js';

/**
 * Starts an unclustered Alertmanager on a free loopback port (or `port`: the same one again, after a restart)
 * whose `route` (YAML, indented two spaces) sends to a receiver `baremetal`: the daemon's webhook with bearer
 * auth from `tokenFile`. Resolves when it answers /-/ready.
 */
export async function startAlertmanager(
  binary: string,
  options: { dir: string; name: string; webhookUrl: string; tokenFile: string; route: string; port?: number },
) {
  const port = options.port ?? (await freePort());
  const file = join(options.dir, `${options.name}.yml`);
  writeFileSync(
    file,
    `route:
${options.route}
receivers:
  - name: ignore
  - name: baremetal
    webhook_configs:
      - url: ${options.webhookUrl}
        send_resolved: true
        http_config:
          authorization:
            credentials_file: ${options.tokenFile}
`,
  );
  const process = startProcess(binary, [
    `--config.file=${file}`,
    `--storage.path=${join(options.dir, options.name)}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--cluster.listen-address=',
    '--log.level=warn',
  ]);
  const url = `http://127.0.0.1:${port}`;
  await eventually(`${options.name} to start (${process.output()})`, async () =>
    (await request(`${url}/-/ready`)).statusCode === 200 ? true : undefined,
  );
  return { ...process, url, port };
}

/**
 * An Alertmanager that notifies no one (every alert routed to `ignore`), for the daemon's API client to read
 * and silence; with the client (`onOutcome` sees each request) over it.
 */
export async function startQuietAlertmanager(
  binary: string,
  prefix: string,
  onOutcome?: (operation: string, ok: boolean) => void,
) {
  const dir = tempDir(prefix, 'all');
  writeFileSync(join(dir, 'token'), 'unused-token-0123456789\n');
  const options = {
    dir,
    name: 'am',
    webhookUrl: 'http://127.0.0.1:9/unused',
    tokenFile: join(dir, 'token'),
    route: '  receiver: ignore',
  };
  const am = await startAlertmanager(binary, options);
  const client = new AlertmanagerClient({
    config: {
      url: am.url,
      timeoutMs: 5000,
      maxResponseBytes: 1 << 20,
      silenceWhileHandled: true,
      tls: { insecureSkipVerify: false },
    },
    logger: captureLogger().logger,
    ...(onOutcome ? { onOutcome } : {}),
  });
  /**
   * Stops this Alertmanager and starts it again on the same port and storage: its silences survive, its alerts
   * do not (Alertmanager keeps them in memory only). Returns the new process (the caller stops it).
   */
  const restart = async (current: { stop: () => Promise<void> }) => {
    await current.stop();
    return startAlertmanager(binary, { ...options, port: am.port });
  };
  return { am, client, restart };
}

/**
 * The daemon's API client for an Alertmanager that cannot be read (the discard port on loopback: every call
 * fails), for a verification or an episode that must not take an unreadable list as evidence.
 */
export function unreadableAlertmanager() {
  return new AlertmanagerClient({
    config: {
      url: 'http://127.0.0.1:9',
      timeoutMs: 2000,
      maxResponseBytes: 1 << 20,
      silenceWhileHandled: false,
      tls: { insecureSkipVerify: false },
    },
    logger: captureLogger().logger,
  });
}
