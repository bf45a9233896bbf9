/** The top-level usage of `baremetal-exporter` (`--help`); docs/cli.md is generated from it. */
import { VERSION } from '../version.js';

export const USAGE = `baremetal-exporter ${VERSION}

Usage:
  baremetal-exporter run --config.file=FILE   run the exporter (env: BAREMETAL_API_URL, BAREMETAL_API_KEY)
      --config.file FILE (alias --config, -c)   the YAML configuration
      --web.listen-address HOST:PORT            overrides web.listen_address
      --web.config.file FILE                    exporter-toolkit web config (TLS, basic auth, headers)
      --log.level debug|info|warn|error         overrides log_level
      --log.format logfmt|json                  log line format (default logfmt)
      --web.enable-lifecycle                    serve POST /-/reload (SIGHUP reloads either way)
      --web.telemetry-path PATH                 where the metrics are served (default /metrics)
  baremetal-exporter check-config FILE        validate a config file (exit 1 listing the problems)
      FILE or --config.file FILE (alias --config, -c), as run takes it
  baremetal-exporter api <command> [options]  every operation of the hosting API (api --help); completion bash
  baremetal-exporter remediation test FILE…   run remediation rule tests (world, timeline of alerts and operator
                                              steps, expected decisions; remediation test --help); exit 1 with
                                              a diff on a mismatch, 2 for a missing or malformed file
  baremetal-exporter remediation replay --config.file NEW.yml [--since 7d] [-o json] [--exit-code]
                                              the recorded deliveries, approvals and operator rows played
                                              again under NEW.yml's remediation block (no API call, no journal
                                              write); a person's decision it would overturn is flagged
  baremetal-exporter actions list|show|approve|deny|withdraw …
                                              the daemon's remediation journal and approvals over its HTTP
                                              API, like amtool (actions --help); exit 1 when it refuses
      actions list [--decision D] [--server ID] [--principal P] [--approver P] [--account A] [--since 24h] [--limit N]
      actions show ID | approve ID [--reason TEXT] | deny ID --reason TEXT | withdraw ID [--reason TEXT]
  baremetal-exporter circuit status|close …   the remediation circuit breaker over the daemon's API
      circuit status [--account A] | close [--account A] --reason TEXT   (circuit --help)
      --daemon.url URL (http://127.0.0.1:9877; env BAREMETAL_DAEMON_URL)  -o table|json|yaml (env BAREMETAL_OUTPUT)
      --token.file FILE (env BAREMETAL_TOKEN_FILE, or the token itself in BAREMETAL_TOKEN)
      a flag not given: its environment variable, else ~/.config/baremetal-exporter/cli.yml (actions --help)
      --tls.ca-file FILE  --tls.cert-file FILE --tls.key-file FILE   an https daemon
  baremetal-exporter demo [--port N]          the simulator and the exporter on loopback, until Ctrl-C
      --port N (9877)  the exporter's port   --simulator.port N (0 = any free port)  the simulator's
  baremetal-exporter simulate [options]       the API simulator alone
      --host H (127.0.0.1)  --port N (8443; 0 = any)  --api-key K (demo-key; env BAREMETAL_API_KEY)
      --servers N (20)  --ips-per-server N (2)  --colocations N (2)  --transits N (1)  --seed N (1)
      --attacks-per-hour P (0.03: the share of IPs attacked within an hour)  --attack-rate P (per 5-minute slot)
      --latency MS (0)  --error-rate P  --html-error-rate P  --malformed-rate P
      --tls-cert FILE --tls-key FILE   serve HTTPS (PEM)
  baremetal-exporter completion bash          a bash completion script: source <(baremetal-exporter completion bash)
  baremetal-exporter --version | -v           the version and the Node.js runtime
  Every command answers --help (or -h). Exit codes: 0 done, 1 failed or refused, 2 a usage error.
`;
