/**
 * The accounts of the shared-accounts tests (`database.share_accounts`): six accounts, each with a simulator of
 * its own that accepts one API key per replica, so that its call log (`keyId`) tells which replica called.
 */
import { startSimulator, type Simulator } from '../../src/simulator/server.js';

export const ACCOUNTS = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];
export const REPLICAS = ['r0', 'r1', 'r2'];

/** A simulator per account (two servers, no attacks) into `sims`; key `keyOf(account, r)` has keyId r. */
export async function startAccountSimulators(
  sims: Map<string, Simulator>,
  keyOf: (account: string, replica: number) => string,
): Promise<void> {
  for (const [i, account] of ACCOUNTS.entries()) {
    const sim = await startSimulator({
      apiKey: keyOf(account, 0),
      servers: 2,
      colocations: 0,
      transits: 0,
      attackRate: 0,
      seed: i + 1,
    });
    sim.setApiKeys(REPLICAS.map((_, r) => keyOf(account, r)));
    sims.set(account, sim);
  }
}
