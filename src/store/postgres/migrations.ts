/**
 * The PostgreSQL schema, one list per component, applied at open by `migrateAll` (each under the migrations
 * advisory lock, pool.ts `migrate`): `journal` (the remediation journal, delivery keys, desired firewall state,
 * attack-event ids) and `ha` (what the leader publishes for the other replicas: the server directory and the
 * graph images; the replicas' membership, its terms and the accounts' leases). The component names are stored in `schema_migrations` and never change. Append only: a
 * released migration is never edited; a new one is added at the end of its component's list.
 */
import type pg from 'pg';
import { migrate, type Migration } from './pool.js';

export const MIGRATIONS: Readonly<Record<'journal' | 'ha', readonly Migration[]>> = {
  journal: [
    `CREATE TABLE actions (
     id BIGSERIAL PRIMARY KEY,
     account TEXT NOT NULL,
     created_at BIGINT NOT NULL,
     completed_at BIGINT,
     source TEXT NOT NULL,
     action TEXT NOT NULL,
     server_id TEXT NOT NULL,
     ip TEXT,
     value TEXT,
     alertname TEXT,
     fingerprint TEXT,
     starts_at TEXT,
     decision TEXT NOT NULL,
     upstream_outcome TEXT,
     message TEXT
   );
   CREATE INDEX actions_target ON actions (account, action, server_id, ip, created_at);
   CREATE INDEX actions_account_created ON actions (account, created_at);
   CREATE INDEX actions_created ON actions (created_at);
   CREATE TABLE deliveries (
     key TEXT PRIMARY KEY,
     action_id BIGINT NOT NULL,
     created_at BIGINT NOT NULL,
     request_digest TEXT,
     seen_at BIGINT
   );
   CREATE INDEX deliveries_action ON deliveries (action_id);
   CREATE INDEX deliveries_seen ON deliveries (seen_at);
   CREATE TABLE firewall_desired (
     account TEXT NOT NULL,
     server_id TEXT NOT NULL,
     ip TEXT NOT NULL,
     desired_state TEXT NOT NULL,
     due_at BIGINT NOT NULL,
     pending INTEGER NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     applied_state TEXT,
     applied_at BIGINT,
     cooldown_ms BIGINT NOT NULL,
     missing_since BIGINT,
     PRIMARY KEY (account, server_id, ip)
   );
   CREATE TABLE event_ids (
     account TEXT NOT NULL,
     service_key TEXT NOT NULL,
     ids TEXT[] NOT NULL,
     PRIMARY KEY (account, service_key)
   );`,
    // 2: principals: who asked for each row (and why, when an operator said so), and who asked for a desired
    // firewall state, so its deferred change is journaled under that name. Older rows keep NULL.
    `ALTER TABLE actions ADD COLUMN principal TEXT;
   ALTER TABLE actions ADD COLUMN reason TEXT;
   CREATE INDEX actions_principal ON actions (principal, id);
   ALTER TABLE firewall_desired ADD COLUMN principal TEXT;
   ALTER TABLE actions ADD COLUMN approver TEXT;
   ALTER TABLE actions ADD COLUMN approved_at BIGINT;
   CREATE INDEX actions_awaiting ON actions (account, decision) WHERE decision = 'awaiting_approval';`,
    // 3: the circuit breaker of each account (remediation.safety.circuit_breaker), open until an operator
    // closes it: every replica sees the same breaker.
    `CREATE TABLE circuit_breakers (
     account TEXT PRIMARY KEY,
     opened_at BIGINT,
     closed_at BIGINT,
     message TEXT
   );`,
    // 4: an alert's labels (bounded JSON) and status, so that `remediation replay` can decide on it again.
    `ALTER TABLE actions ADD COLUMN labels TEXT;
   ALTER TABLE actions ADD COLUMN alert_status TEXT;`,
    // 5: an operator's power call forced past the attack guard, so that its approval decides on it forced too.
    `ALTER TABLE actions ADD COLUMN forced BOOLEAN NOT NULL DEFAULT false;`,
    // 6: what a request was made with (its rule's position and digest, its cooldown, hold and require_owned_ip),
    // so that an approval runs the request as it was made, never a rule looked up again. Older rows keep NULL.
    `ALTER TABLE actions ADD COLUMN rule_index INTEGER;
   ALTER TABLE actions ADD COLUMN rule_digest TEXT;
   ALTER TABLE actions ADD COLUMN cooldown_ms BIGINT;
   ALTER TABLE actions ADD COLUMN hold_ms BIGINT;
   ALTER TABLE actions ADD COLUMN require_owned_ip BOOLEAN;`,
    // 7: the approver's or denier's own reason (it was journaled nowhere, or only inside the message), and an
    // expired row keeps no approval time (it was given one, with no approver).
    `ALTER TABLE actions ADD COLUMN approver_reason TEXT;
   UPDATE actions SET approved_at = NULL WHERE decision = 'expired' AND approver IS NULL;`,
    // 8: verification (issue 41): the rule's verify_within and its ladder step, recorded with the request, and
    // the outcome (verified, ineffective) with its time; the leader reads the executed rows still verifying.
    `ALTER TABLE actions ADD COLUMN verify_within_ms BIGINT;
   ALTER TABLE actions ADD COLUMN verification TEXT;
   ALTER TABLE actions ADD COLUMN verified_at BIGINT;
   ALTER TABLE actions ADD COLUMN ladder_step INTEGER;
   CREATE INDEX actions_verifying ON actions (account, id)
     WHERE decision = 'executed' AND verify_within_ms IS NOT NULL AND verification IS NULL;`,
    // 9: what the outage gate read for a decision (JSON; issue 49) and the evidence a verification settled on, so
    // that `remediation replay` reads them again instead of asking an Alertmanager. Older rows keep NULL.
    `ALTER TABLE actions ADD COLUMN gate TEXT;
   ALTER TABLE actions ADD COLUMN verification_evidence TEXT;`,
  ],
  ha: [
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
    // 2: ha_directory holds one row per account, rewritten at every change of the server list: under the
    // default thresholds (50 dead versions + 20 %) autovacuum may not reach it for hours while its dead versions
    // (and, for a large account, their TOAST chunks) pile up. Vacuumed after a few dead versions instead, with
    // room on each page for the next version (a HOT update).
    `ALTER TABLE ha_directory SET (fillfactor = 50, autovacuum_vacuum_threshold = 4,
     autovacuum_vacuum_scale_factor = 0, toast.autovacuum_vacuum_threshold = 4,
     toast.autovacuum_vacuum_scale_factor = 0);`,
    // 3: replica membership (store/postgres/membership.ts): one row per replica, its heartbeat refreshed every
    // few seconds (database time, so the replicas' clocks never matter); a replica is live while its heartbeat
    // is within the lease. Rewritten constantly: room on each page for a HOT update, vacuumed early.
    `CREATE TABLE ha_replicas (
     replica TEXT PRIMARY KEY,
     heartbeat_at TIMESTAMPTZ NOT NULL,
     started_at TIMESTAMPTZ NOT NULL DEFAULT now()
   ) WITH (fillfactor = 50, autovacuum_vacuum_threshold = 20, autovacuum_vacuum_scale_factor = 0);`,
    // 4: one lease per account (store/postgres/leases.ts): who leads it until when, and the epoch every claim
    // bumps; a write for the account carries the epoch and is refused unless it is still the current one.
    `CREATE TABLE ha_leases (
     account TEXT PRIMARY KEY,
     -- the replica that leads the account, NULL once released
     holder TEXT,
     epoch BIGINT NOT NULL,
     expires_at TIMESTAMPTZ NOT NULL
   ) WITH (fillfactor = 50, autovacuum_vacuum_threshold = 20, autovacuum_vacuum_scale_factor = 0);`,
    // 5: the terms each replica shares the database on (ha/terms.ts): its boot identity (a name held by a live
    // process of another boot is refused), the leadership model, the account names and a digest of the
    // accounts (names and base URLs). started_at becomes the time this boot first beat. NULL from older versions.
    `ALTER TABLE ha_replicas ADD COLUMN boot_id TEXT;
   ALTER TABLE ha_replicas ADD COLUMN mode TEXT;
   ALTER TABLE ha_replicas ADD COLUMN accounts TEXT[];
   ALTER TABLE ha_replicas ADD COLUMN accounts_digest TEXT;`,
  ],
};

/** Applies every component's migrations, in order (journal, then ha). Throws as `migrate` does. */
export async function migrateAll(pool: pg.Pool): Promise<void> {
  for (const [component, migrations] of Object.entries(MIGRATIONS)) await migrate(pool, component, migrations);
}
