import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { captureLogger } from '../helpers/logger.js';
import { powercycleDaemonConfig, TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

let sim: Simulator | undefined;
let daemon: Daemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  await sim?.close();
  daemon = sim = undefined;
});

const unreachable = {
  version: '4',
  status: 'firing',
  receiver: 'baremetal',
  alerts: [
    {
      status: 'firing',
      labels: { alertname: 'BaremetalServerUnreachable', server_id: '100002' },
      annotations: {},
      startsAt: '2026-11-21T10:00:00Z',
      endsAt: '0001-01-01T00:00:00Z',
      fingerprint: 'a1b2c3d4e5f60718',
    },
  ],
};

describe('remediation across a restart', () => {
  it('power-cycles once for an alert delivered before and after a restart', async () => {
    const stateDir = tempDir();
    writeFileSync(join(stateDir, 'token'), TOKEN);
    sim = await startSimulator({ apiKey: 'k', servers: 3 });
    const config = powercycleDaemonConfig(sim.url, stateDir);
    const deliver = async (d: Daemon) => {
      const res = await d.app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: unreachable,
      });
      expect(res.statusCode).toBe(200);
      return res.json().results[0].decision as string;
    };

    daemon = await startDaemon(config, { logger: captureLogger().logger, listen: false, schedule: false });
    await daemon.ready;
    expect(await deliver(daemon)).toBe('executed');
    await daemon.stop();

    daemon = await startDaemon(config, { logger: captureLogger().logger, listen: false, schedule: false });
    await daemon.ready;
    expect(await deliver(daemon)).toBe('duplicate');
    expect(sim.callsTo('/api/v1/dedicated/powercycle', { server_id: '100002' })).toHaveLength(1);
    expect((await daemon.journal.list({ limit: 10 })).map((e) => e.decision)).toEqual(['duplicate', 'executed']);
  });
});
