/**
 * The firewall (DDoS) commands of `baremetal-exporter api`: a service's attack history, and an IP's
 * sensitivity and state (the state at most once per 2 minutes: firewall-window.ts). commands.ts lists them
 * with the other leaves.
 */
import {
  FIREWALL_STATES,
  SENSITIVITIES,
  SERVICE_TYPES,
  type FirewallScale,
  type ServiceType,
} from '../../config/api-terms.js';
import { getFirewallHistory, setFirewallSensitivity, setFirewallState } from '../../upstream/firewall.js';
import { flag, option } from './context.js';
import { usage } from './exit.js';
import { withFirewallWindow } from './firewall-window.js';
import type { Leaf } from './leaf.js';
import { table } from './output.js';
import { runAction } from './write.js';

/** `value` when it is one of `allowed`; a usage error (exit 2) naming `name` otherwise. */
function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value))
    throw usage(`${name} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  return value as T;
}

/** `api firewall history|sensitivity|state`, in this order. */
export const FIREWALL_LEAVES: Leaf[] = [
  {
    path: ['firewall', 'history'],
    args: ['dedicated|colocation|transit', 'ID'],
    synopsis: '[--ip IP] [--scale hour|day|week]',
    options: ['ip', 'scale'],
    write: false,
    summary: 'firewall (DDoS) events of a service (--scale hour|day|week, default day)',
    example: 'baremetal-exporter api firewall history colocation colo-1 --scale week',
    run: async (ctx) => {
      const type = oneOf<ServiceType>('service type', ctx.args[0]!, SERVICE_TYPES);
      const events = await getFirewallHistory(
        ctx.client,
        type,
        ctx.args[1]!,
        (option(ctx, 'scale') ?? 'day') as FirewallScale,
        option(ctx, 'ip'),
      );
      return {
        data: events,
        table: table(
          ['ID', 'IP', 'EVENT'],
          events.map((e) => [e.id, e.ip, e.raw]),
        ),
      };
    },
  },
  {
    path: ['firewall', 'sensitivity'],
    args: ['SERVER_ID', 'IP', SENSITIVITIES.join('|')],
    options: [],
    write: true,
    summary: 'set the firewall sensitivity of an IP',
    example: 'baremetal-exporter api firewall sensitivity 100001 198.18.0.1 high',
    run: (ctx) => {
      const [serverId, ip, level] = ctx.args as [string, string, string];
      return runAction(ctx, {
        action: 'firewall_sensitivity',
        serverId,
        ip,
        value: level,
        call: (c) => setFirewallSensitivity(c, { serverId, ip, sensitivity: level as never }),
      });
    },
  },
  {
    path: ['firewall', 'state'],
    args: ['SERVER_ID', 'IP', FIREWALL_STATES.join('|')],
    synopsis: '[--wait]',
    options: ['wait'],
    write: true,
    summary: 'set the firewall state of an IP: 1 Always On, 0 Redirect On Attack (once per 2 minutes)',
    example: 'baremetal-exporter api firewall state 100001 198.18.0.1 1 --wait',
    run: (ctx) => {
      const [serverId, ip, state] = ctx.args as [string, string, string];
      const lastChange = async () => (await ctx.store())?.lastSent(ctx.account, 'firewall_state', serverId, ip);
      return runAction(ctx, {
        action: 'firewall_state',
        serverId,
        ip,
        value: state,
        call: (c) => setFirewallState(c, { serverId, ip, state: state as never }),
        around: async (send) =>
          withFirewallWindow(send, {
            wait: flag(ctx, 'wait'),
            now: ctx.io.now,
            sleep: ctx.io.sleep,
            lastChange: await lastChange(),
            notify: (l) => ctx.io.stderr.write(`${l}\n`),
          }),
      });
    },
  },
];
