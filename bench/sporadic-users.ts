/**
 * The bench row "valid sporadic basic-auth users under a wrong-Basic flood from another address": `users`
 * basic-auth users (bcrypt cost 10) each log in once, uncached — as an Alertmanager delivering a webhook every
 * few minutes does — from 127.0.0.1, one every `everyMs`, while bench/flood.ts sends wrong `Basic` passwords
 * from 127.0.0.2 with `loops` loops (the whole 127/8 is loopback on Linux). Goal: 0 refused. bench/size.ts
 * --extras adds it beside the other flood rows; it also runs alone, against an empty exposition:
 *
 *   npm run build && node bench/sporadic-users.ts [--users 20] [--loops 40]
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import bcrypt from 'bcryptjs';
import { Registry } from 'prom-client';
import { Agent, request } from 'undici';
import { buildApp } from '../dist/http/app.js';
import { BcryptPool } from '../dist/http/bcrypt-pool.js';
import { createLogger } from '../dist/logger.js';
import { ExpositionCache } from '../dist/metrics/exposition-cache.js';
import type { Row } from './options.ts';
import { spawnFlood } from './spawn-flood.ts';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** What the row needs of the daemon: the exposition /metrics serves and the graph stores /graphs reads. */
export interface SporadicUsersOptions {
  exposition: ExpositionCache;
  graphStores: Parameters<typeof buildApp>[0]['graphStores'];
  /** flooding loops, from 127.0.0.2 */
  loops: number;
  /** valid users, each logging in once from 127.0.0.1 */
  users: number;
  /** the pause between two valid logins, in milliseconds */
  everyMs?: number;
}

export async function sporadicUsersRow(o: SporadicUsersOptions): Promise<Row> {
  const everyMs = o.everyMs ?? 250;
  const users = Array.from({ length: o.users }, (_, i) => ({ user: `am${i}`, password: `sporadic-password-${i}` }));
  const pool = new BcryptPool();
  const app = buildApp({
    logger: createLogger('error'),
    exposition: o.exposition,
    graphStores: o.graphStores,
    graphMaxWidth: 2000,
    webAuth: {
      bearerTokens: [],
      basicAuthUsers: Object.fromEntries(users.map((u) => [u.user, bcrypt.hashSync(u.password, 10)])),
    },
    passwordVerifier: pool,
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const flood = await spawnFlood(`${url}/metrics`, o.loops, basic('am0', 'wrong-password'), '127.0.0.2');
  const agent = new Agent({ connections: 1, localAddress: '127.0.0.1' });
  const statuses: Record<string, number> = {};
  for (const { user, password } of users) {
    const res = await request(`${url}/metrics`, {
      dispatcher: agent,
      headers: { authorization: basic(user, password) },
    });
    await res.body.dump();
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  const { requests, statuses: floodStatuses } = await flood.stop();
  await agent.close();
  await app.close();
  await pool.close();
  const refused = o.users - (statuses['200'] ?? 0);
  return {
    what: 'valid sporadic basic-auth users refused, wrong-Basic flood from another address',
    measured: refused,
    unit: '',
    reference: `${o.users} users logging in once each (uncached, bcrypt cost 10) from 127.0.0.1, answers ${JSON.stringify(statuses)}; ${o.loops} loops from 127.0.0.2, ${requests} wrong requests answered ${JSON.stringify(floodStatuses)}; bcrypt ran ${pool.compared}×`,
    target: 0,
    rule: '= 0',
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: { users: { type: 'string', default: '20' }, loops: { type: 'string', default: '40' } },
  });
  const row = await sporadicUsersRow({
    exposition: new ExpositionCache({ registry: new Registry() }),
    graphStores: new Map(),
    loops: Number(values.loops),
    users: Number(values.users),
  });
  console.log(JSON.stringify(row));
}
