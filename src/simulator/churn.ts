/**
 * Churn for the simulator (issue 32, `npm run soak`): one step changes the inventory the way a provider's
 * fleet changes over a minute — servers are added and removed, IPs move between servers, attacks start and
 * end on a share of the IPs. Seeded, so a run can be repeated; the caller decides when a step happens.
 */
import { seededRandom } from './prng.js';
import { type SimulatorState, simulatorIp } from './state.js';

/** How much one step changes; shares are fractions in [0, 1] of the current servers or IPs. */
export interface ChurnKnobs {
  /** servers added, and as many removed, per step: this share of the servers, at least 1 (default 0.05) */
  serverShare?: number;
  /** IPs moved from one server to another per step: this share of the servers, at least 1 (default 0.05) */
  moveShare?: number;
  /** share of the dedicated servers' IPs whose (forced) attack starts at a step (default 0.03) */
  attackShare?: number;
  /** an attack lasts this many steps, at least (default 1) … */
  attackStepsMin?: number;
  /** … and at most (default 3) */
  attackStepsMax?: number;
  /** IPs of a new server (default 2) */
  ipsPerServer?: number;
  /** seed of every choice (default 1) */
  seed?: number;
}

/** What one step did: attack IPs are the ones a webhook fires or resolves for. */
export interface ChurnStep {
  added: string[];
  removed: string[];
  /** IPs moved: ip, from server id, to server id */
  moved: Array<{ ip: string; from: string; to: string }>;
  /** attacks started: ip and the server it belongs to */
  attacksStarted: Array<{ ip: string; serverId: string }>;
  /** attacks ended (also those whose server left or whose IP moved): ip and the server it belonged to */
  attacksEnded: Array<{ ip: string; serverId: string }>;
}

/** First IP number (simulatorIp) given to servers the churn adds, above any a simulator starts with. */
const CHURN_IP_BASE = 60_000;
/** First server id the churn adds (the simulator's own start at 100001). */
const CHURN_SERVER_BASE = 200_000;

/** Applies churn steps to a simulator's state; `step()` once per period (a minute in the soak). */
export class Churn {
  readonly #state: SimulatorState;
  readonly #random: () => number;
  readonly #k: Required<ChurnKnobs>;
  #nextServer = 0;
  #nextIp = 0;
  #step = 0;
  /** forced attacks under way: ip → the server it was started on and the step at which it ends */
  readonly attacks = new Map<string, { serverId: string; endStep: number }>();

  constructor(state: SimulatorState, knobs: ChurnKnobs = {}) {
    for (const [key, value] of Object.entries(knobs))
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
        throw new RangeError(`churn ${key}: expected a number ≥ 0, got ${value}`);
    this.#state = state;
    this.#k = {
      serverShare: 0.05,
      moveShare: 0.05,
      attackShare: 0.03,
      attackStepsMin: 1,
      attackStepsMax: 3,
      ipsPerServer: 2,
      seed: 1,
      ...knobs,
    };
    if (this.#k.attackStepsMax < this.#k.attackStepsMin) throw new RangeError('churn: attackStepsMax < attackStepsMin');
    this.#random = seededRandom(this.#k.seed * 104_729);
  }

  #pick<T>(items: T[]): T | undefined {
    return items[Math.floor(this.#random() * items.length)];
  }

  #count(share: number, of: number): number {
    return of === 0 || share === 0 ? 0 : Math.max(1, Math.round(share * of));
  }

  /** Ends the attack on `ip` now, if one is under way; records it in `ended`. */
  #end(ip: string, ended: ChurnStep['attacksEnded']): void {
    const attack = this.attacks.get(ip);
    if (!attack) return;
    this.#state.stopAttack(ip);
    this.attacks.delete(ip);
    ended.push({ ip, serverId: attack.serverId });
  }

  /** One period of churn: ends due attacks, removes and adds servers, moves IPs, starts attacks. */
  step(): ChurnStep {
    const state = this.#state;
    const result: ChurnStep = { added: [], removed: [], moved: [], attacksStarted: [], attacksEnded: [] };
    this.#step++;
    for (const [ip, attack] of [...this.attacks]) if (attack.endStep <= this.#step) this.#end(ip, result.attacksEnded);
    const servers = state.servers.size;
    for (let i = this.#count(this.#k.serverShare, servers); i > 0; i--) {
      const gone = this.#pick([...state.servers.keys()]);
      if (gone === undefined) break;
      for (const ip of state.servers.get(gone)!.ips) this.#end(ip, result.attacksEnded);
      state.removeServer(gone);
      result.removed.push(gone);
      const ips = Array.from({ length: this.#k.ipsPerServer }, () => simulatorIp(CHURN_IP_BASE + this.#nextIp++));
      const id = String(CHURN_SERVER_BASE + ++this.#nextServer);
      state.addServer(id, ips);
      result.added.push(id);
    }
    for (let i = this.#count(this.#k.moveShare, state.servers.size); i > 0; i--) {
      const from = this.#pick([...state.servers.values()].filter((s) => s.ips.length > 1));
      const to = this.#pick([...state.servers.values()].filter((s) => s !== from));
      if (!from || !to) break;
      // A server's IP list is also its firewall service's (the same array): both change together.
      const ip = from.ips.splice(Math.floor(this.#random() * from.ips.length), 1)[0]!;
      this.#end(ip, result.attacksEnded);
      to.ips.push(ip);
      result.moved.push({ ip, from: from.serverId, to: to.serverId });
    }
    const candidates = [...state.servers.values()].flatMap((s) =>
      s.ips.filter((ip) => !this.attacks.has(ip)).map((ip) => ({ ip, serverId: s.serverId })),
    );
    const allIps = [...state.servers.values()].reduce((n, s) => n + s.ips.length, 0);
    for (let i = this.#count(this.#k.attackShare, allIps); i > 0 && candidates.length > 0; i--) {
      const target = candidates.splice(Math.floor(this.#random() * candidates.length), 1)[0]!;
      const span = this.#k.attackStepsMax - this.#k.attackStepsMin + 1;
      const steps = this.#k.attackStepsMin + Math.floor(this.#random() * span);
      state.startAttack(target.ip, 24 * 3600);
      this.attacks.set(target.ip, { serverId: target.serverId, endStep: this.#step + steps });
      result.attacksStarted.push(target);
    }
    return result;
  }
}
