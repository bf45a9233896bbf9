/** Bare metal — server: one dedicated server's inventory, attacks per IP, port-traffic graphs and remediation state. */
import type { Dashboard } from '@grafana/schema';
import { VariableHide } from '@grafana/schema';
import type { MixinConfig } from '../config.ts';
import { attackStarts } from './annotations.ts';
import { commonVariables, dashboard, panel, STAT_OPTIONS, sel, serverVariable, steps } from './common.ts';
import { FIREWALL_STATES } from './remediation.ts';

const image = (scale: string) =>
  `<img src="\${exporter_url}/graphs/dedicated/\${server_id}/port_bits/${scale}.png" alt="port_bits ${scale}" style="max-width:49%">`;

export function server(config: MixinConfig): Dashboard {
  return dashboard({
    uid: 'baremetal-server',
    title: 'Bare metal — server',
    description: 'One dedicated server: inventory, attacks per IP, port-traffic graphs and remediation state.',
    variables: [
      ...commonVariables(),
      serverVariable(),
      {
        name: 'exporter_url',
        label: 'Exporter base URL',
        type: 'textbox',
        query: 'http://localhost:9877',
        current: { text: 'http://localhost:9877', value: 'http://localhost:9877' },
        options: [],
        hide: VariableHide.dontHide,
        description:
          "Where the browser reaches the exporter's /graphs: with web.auth set, a proxy that adds the credentials (README, Dashboards)",
      },
    ],
    // This server's attacks; remediation decisions carry no server_id, so they stay on the fleet dashboards.
    annotations: [attackStarts(config, 'service_type="dedicated", service_id="$server_id"')],
    panels: [
      panel({
        id: 1,
        type: 'table',
        title: 'Server',
        grid: [0, 0, 19, 4],
        description: "The server's record as the API lists it.",
        queries: [{ expr: sel('baremetal_server_info', 'server_id="$server_id"'), table: true }],
        fieldConfig: { defaults: { unit: 'none' }, overrides: [] },
      }),
      panel({
        id: 7,
        type: 'stat',
        title: 'Cancellation',
        grid: [19, 0, 5, 4],
        description:
          'The cancellation its record says is scheduled: immediate, or end (of the billing cycle); BaremetalServerCancellationScheduled fires while one is. "none scheduled" when there is none.',
        queries: [
          {
            expr: `max by (cancellation_type) (${sel('baremetal_server_cancellation_scheduled', 'server_id="$server_id"')})`,
            legend: '{{cancellation_type}}',
          },
        ],
        fieldConfig: {
          defaults: { unit: 'none', noValue: 'none scheduled', thresholds: steps('green', [1, 'orange']) },
          overrides: [],
        },
        options: { ...STAT_OPTIONS, textMode: 'name' },
      }),
      panel({
        id: 2,
        type: 'timeseries',
        title: 'Attack events per IP',
        grid: [0, 4, 12, 8],
        description:
          'Firewall (DDoS) events per IP in the latest hour-scale history; BaremetalIpUnderAttack fires above 0.',
        queries: [
          {
            expr: sel(
              'baremetal_firewall_attack_events_last_hour',
              'service_type="dedicated", service_id="$server_id"',
            ),
            legend: '{{ip}}',
          },
        ],
        fieldConfig: {
          defaults: {
            unit: 'short',
            min: 0,
            thresholds: steps('green', [1, 'red']),
            custom: { thresholdsStyle: { mode: 'line' } },
          },
          overrides: [],
        },
      }),
      panel({
        id: 3,
        type: 'timeseries',
        title: 'Desired firewall state per IP',
        grid: [12, 4, 12, 8],
        description: '1 Always On, 0 Redirect On Attack: what remediation wants for each IP of this server.',
        queries: [{ expr: sel('baremetal_firewall_desired_state', 'server_id="$server_id"'), legend: '{{ip}}' }],
        fieldConfig: {
          defaults: { unit: 'none', min: 0, max: 1, decimals: 0, mappings: FIREWALL_STATES },
          overrides: [],
        },
      }),
      panel({
        id: 4,
        type: 'text',
        title: 'Port traffic (latest graphs)',
        grid: [0, 12, 16, 10],
        description:
          "Images served by the exporter's /graphs; the browser must reach ${exporter_url} (with web.auth set, through a proxy that adds the credentials: README, Dashboards).",
        options: { mode: 'html', content: `${image('day')} ${image('week')}` },
      }),
      panel({
        id: 5,
        type: 'stat',
        title: 'Graph age',
        grid: [16, 12, 8, 5],
        description:
          'Seconds since each graph image was last fetched and decoded: amber past 15 minutes, red past an hour.',
        queries: [
          {
            expr: `time() - ${sel('baremetal_graph_last_success_timestamp_seconds', 'server_id="$server_id"')}`,
            legend: '{{graph}} {{scale}}',
          },
        ],
        fieldConfig: {
          defaults: { unit: 's', thresholds: steps('green', [900, 'yellow'], [3600, 'red']) },
          overrides: [],
        },
      }),
      panel({
        id: 6,
        type: 'stat',
        title: 'IPs',
        grid: [16, 17, 8, 5],
        description: 'IPs assigned to the server according to its record.',
        queries: [{ expr: sel('baremetal_server_ips', 'server_id="$server_id"') }],
        fieldConfig: { defaults: { unit: 'short', thresholds: steps('blue') }, overrides: [] },
      }),
    ],
  });
}
