/**
 * The simulated fleet's vocabulary: the operating systems, hardware, locations and attack types servers and
 * events are drawn from, the default attack rate, and the simulator's address space. state.ts draws from it.
 */
export const OS_NAMES = ['Debian 12', 'Ubuntu 24.04', 'AlmaLinux 9', 'Rocky Linux 9', 'FreeBSD 14'];
export const CPUS = ['Intel Xeon E-2388G', 'AMD EPYC 7443P', 'AMD Ryzen 9 7950X', 'Intel Xeon Gold 6338'];
export const MEMORY = ['32 GB', '64 GB', '128 GB', '256 GB'];
export const LOCATIONS = [
  { id: 'ams1', name: 'Amsterdam' },
  { id: 'fra1', name: 'Frankfurt' },
  { id: 'nyc1', name: 'New York' },
  { id: 'sin1', name: 'Singapore' },
];
export const OPERATING_SYSTEMS = OS_NAMES.map((name, i) => ({
  id: String(i + 1),
  name,
  arch: 'amd64',
  type: 'unix',
  price_per_core: '0',
}));
export const ATTACK_TYPES = ['udp_flood', 'syn_flood', 'dns_amplification', 'ntp_amplification', 'ack_flood'];

/** Length of an attack episode slot by default, seconds. */
export const DEFAULT_EPISODE_SECONDS = 300;

/**
 * The share of IPs that see an attack within an hour by default: a few percent, as a provider's fleet does
 * (issue 22: 0.03 a five-minute slot put a third of the IPs under attack within the hour, a history production
 * rarely has, and a demo that alarmed a newcomer).
 */
export const ATTACKED_PER_HOUR = 0.03;

/**
 * The chance per episode slot that puts `perHour` (a fraction in [0, 1)) of the IPs under attack at least
 * once within an hour: 1 − (1 − perHour)^(slot / 1 h). Throws a RangeError outside [0, 1).
 */
export function slotAttackRate(perHour: number, episodeSeconds = DEFAULT_EPISODE_SECONDS): number {
  if (!(perHour >= 0 && perHour < 1)) throw new RangeError(`attacks per hour must be in [0, 1): ${perHour}`);
  return 1 - (1 - perHour) ** (episodeSeconds / 3600);
}

/** IP number n of the simulator's address space, 198.18.0.0/15 (RFC 2544 benchmarking range). */
export function simulatorIp(n: number): string {
  const base = (198 << 24) + (18 << 16) + 1 + n;
  return [base >>> 24, (base >>> 16) & 255, (base >>> 8) & 255, base & 255].join('.');
}
