/** Every dashboard of the mixin, by the file name it is rendered to under dashboards/. */
import type { Dashboard } from '@grafana/schema';
import type { MixinConfig } from '../config.ts';
import { overview } from './overview.ts';
import { remediation } from './remediation.ts';
import { server } from './server.ts';

export function dashboards(config: MixinConfig): Array<{ file: string; dashboard: Dashboard }> {
  return [
    { file: 'baremetal-overview.json', dashboard: overview(config) },
    { file: 'baremetal-remediation.json', dashboard: remediation(config) },
    { file: 'baremetal-server.json', dashboard: server(config) },
  ];
}
