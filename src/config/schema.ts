/**
 * The configuration's constants and its schema, defined once: the YAML file's JSON Schema with every key's
 * default, unit and description is declared with TypeBox in config/config-file.schema.ts (read at build time
 * only) and generated as plain JSON Schema into config/generated/config-file.ts (`npm run schemas`), which this
 * module re-exports, so that the daemon never loads TypeBox. The file's type (`ConfigFile`) is derived from the
 * declaration; the normalized `Config` the loader builds from it (durations in ms, secrets read from their files)
 * is in config/types.ts. docs/configuration.md is generated from the schema (`npm run docs`, scripts/docs.ts) and
 * a test fails when it drifts.
 *
 * Four format keywords, checked by Ajv like JSON Schema's own (config/formats.ts): `duration`, `cron`,
 * `listenAddress` and `bcrypt`. Two annotations besides JSON Schema's own (Ajv knows them as
 * `SCHEMA_ANNOTATIONS`; they validate nothing): `unit` (what a number or string counts: `duration`, `bytes`,
 * `cron`, …) and `reloadable: true` (a configuration reload applies the key, and every key under it, while the
 * daemon runs; config/reload.ts).
 *
 * A key with a default is listed as required: Ajv fills defaults before it checks `required`, so it is never
 * missing, and the derived type says the value is always there.
 */
import type { Static } from 'typebox';
import type { configFileSchema as declared } from './config-file.schema.js';

export * from './schema-constants.js';
/** JSON Schema of the YAML file (config/config-file.schema.ts). Unknown keys are errors; defaults are filled in by Ajv. */
export { configFileSchema, upstreamProperties } from './generated/config-file.js';

/** The file after Ajv filled in the defaults. */
export type ConfigFile = Static<typeof declared>;
