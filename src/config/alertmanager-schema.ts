/**
 * The schema of `remediation.alertmanager` and `remediation.safety.block_while_firing` (config/schema.ts holds
 * them; config/alertmanager.ts reads them): apart from the reader, which reads files, so that the schema
 * imports nothing that imports it.
 */
import { Type } from 'typebox';
import { strictObject as strict } from '../json-schema.js';

const file = (description: string) => Type.Optional(Type.String({ minLength: 1, description }));

/** Default of `remediation.alertmanager.max_response_bytes`: a reply of a few thousand alerts. */
export const DEFAULT_ALERTMANAGER_MAX_BYTES = 8 * 1024 * 1024;

/** The schema of `remediation.alertmanager` (optional: absent, the daemon never calls Alertmanager). */
export const alertmanagerSchema = strict(
  {
    url: Type.String({
      minLength: 1,
      description:
        "Alertmanager's address with its path prefix, if any (`http://alertmanager:9093`); `/api/v2/…` is appended",
    }),
    timeout: Type.String({
      default: '10s',
      unit: 'duration',
      duration: '10s',
      description: 'duration of one request, connection to the last byte of the reply',
    }),
    resend_interval: Type.String({
      default: '1m',
      unit: 'duration',
      duration: '1m',
      description:
        "how often Prometheus sends a firing alert again (the larger of its `--rules.alert.resend-delay` and the rule's evaluation interval): an Alertmanager up for less than this may not hold every firing alert yet, so its alert list is no evidence that an alert resolved",
    }),
    max_response_bytes: Type.Integer({
      minimum: 1024,
      maximum: 256 * 1024 * 1024,
      default: DEFAULT_ALERTMANAGER_MAX_BYTES,
      unit: 'bytes',
      description: 'largest reply read (the alert list); a larger one is a failed request',
    }),
    silence_while_handled: Type.Boolean({
      default: true,
      description:
        'silence the alert a request handles while it awaits approval or is verifying (comment: its journal entry), expired when it ends; false: never write to Alertmanager',
    }),
    http_config: strict(
      {
        authorization: Type.Optional(
          strict({
            type: Type.String({ minLength: 1, default: 'Bearer', description: 'the scheme of the header' }),
            credentials_file: Type.String({ minLength: 1, description: 'a file holding the credentials' }),
          }),
        ),
        basic_auth: Type.Optional(
          strict({
            username: Type.String({ minLength: 1, description: 'the user name' }),
            password_file: Type.String({ minLength: 1, description: 'a file holding the password' }),
          }),
        ),
        tls_config: strict(
          {
            ca_file: file('CA certificates (PEM) that verify the server, besides the system ones'),
            cert_file: file('client certificate (PEM), with `key_file`'),
            key_file: file('client key (PEM)'),
            server_name: Type.Optional(
              Type.String({ minLength: 1, description: 'the name the certificate must have' }),
            ),
            insecure_skip_verify: Type.Boolean({ default: false, description: 'do not verify the certificate' }),
          },
          { default: {} },
        ),
      },
      { default: {}, description: 'as Prometheus writes it: one of `authorization` and `basic_auth`, `tls_config`' },
    ),
  },
  { description: "Alertmanager's API v2 (the outage gate); absent: never called" },
);

/** The schema of `remediation.safety.block_while_firing`. */
export const blockWhileFiringSchema = Type.Array(Type.String({ minLength: 1 }), {
  default: [],
  maxItems: 100,
  description:
    'Alertmanager matchers (`alertname = "DatacenterOutage"`, `severity =~ "critical|page"`): while an active alert in Alertmanager matches them all, power actions are `denied_blocked`; needs `remediation.alertmanager`, and while it cannot be read they are denied too',
});
