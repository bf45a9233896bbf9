/**
 * The key a client is counted under by the per-address limits (open connections, password checks): its IPv4
 * address, or the /64 prefix of its IPv6 address, since one host or network is routinely given a whole /64
 * and could otherwise take a fresh address per connection. An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`,
 * what a dual-stack listener reports) is its IPv4 address.
 */
import { isIPv6 } from 'node:net';

/** `address` as a socket reports it → the key its limits are counted under; `''` when unknown. */
export function clientKey(address: string | undefined): string {
  if (!address) return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
