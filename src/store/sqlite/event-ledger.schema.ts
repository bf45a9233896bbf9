/**
 * The schema of the event ledger's file (store/sqlite/event-ledger.ts reads it), declared with TypeBox. Build
 * time only: `npm run schemas` writes it as plain JSON Schema into store/sqlite/generated/event-ledger.ts; nothing
 * at run time imports this module (issue 53).
 */
import { Type } from 'typebox';

/** `<state_dir>/events/<account>.json`: the version, and each service's event ids. */
export const ledgerFileSchema = Type.Object({
  version: Type.Unsafe<1>({ const: 1 }),
  /** `type/id` → event ids of its latest history */
  services: Type.Unsafe<Record<string, string[]>>({
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string', maxLength: 256 }, maxItems: 100_000 },
  }),
});
