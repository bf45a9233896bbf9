/**
 * The tables of the `ha` component (database/postgres.ts `migrate`): what the leader publishes for the
 * other replicas. Append only: a released migration is never edited.
 */
import type { Migration } from '../database/postgres.js';

export const HA_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE ha_directory (
     account TEXT PRIMARY KEY,
     -- server id -> the IPs it owns: its record's and those seen in its firewall history
     servers JSONB NOT NULL,
     -- bumped by every change, so that a replica reads the list only when it changed
     version BIGINT NOT NULL,
     updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
   );
   CREATE TABLE ha_graphs (
     account TEXT NOT NULL,
     server_id TEXT NOT NULL,
     type TEXT NOT NULL,
     scale TEXT NOT NULL,
     png BYTEA NOT NULL,
     etag TEXT NOT NULL,
     width INTEGER NOT NULL,
     height INTEGER NOT NULL,
     -- ms since the epoch the leader fetched the image
     updated_at BIGINT NOT NULL,
     PRIMARY KEY (account, server_id, type, scale)
   );`,
];
