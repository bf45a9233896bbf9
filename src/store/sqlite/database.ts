/**
 * Opening the journal database: the file-header check that keeps a file that is not a SQLite database
 * from being replaced, an integrity check, and the schema migrations (append only: a released migration
 * is never edited; a new one is added at the end).
 */
import { closeSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/** The first 16 bytes of every SQLite 3 database file. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

export const MIGRATIONS = [
  `CREATE TABLE actions (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     created_at INTEGER NOT NULL,
     completed_at INTEGER,
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
   CREATE INDEX actions_target ON actions (action, server_id, ip, created_at);
   CREATE INDEX actions_created ON actions (created_at);
   CREATE TABLE deliveries (key TEXT PRIMARY KEY, action_id INTEGER NOT NULL, created_at INTEGER NOT NULL);
   CREATE TABLE firewall_desired (
     server_id TEXT NOT NULL,
     ip TEXT NOT NULL,
     desired_state TEXT NOT NULL,
     due_at INTEGER NOT NULL,
     pending INTEGER NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     applied_state TEXT,
     applied_at INTEGER,
     cooldown_ms INTEGER NOT NULL,
     PRIMARY KEY (server_id, ip)
   );`,
  // 2: a digest of the request per delivery key (a key reused for another request is refused), when the
  // key was last seen (pruning keeps keys Alertmanager still redelivers), and since when a desired
  // state's server is missing from the server list (retired after 24 h).
  `ALTER TABLE deliveries ADD COLUMN request_digest TEXT;
   ALTER TABLE deliveries ADD COLUMN seen_at INTEGER;
   CREATE INDEX deliveries_action ON deliveries (action_id);
   CREATE INDEX deliveries_seen ON deliveries (seen_at);
   ALTER TABLE firewall_desired ADD COLUMN missing_since INTEGER;`,
  // 3: targets are (account, server_id): server ids are per account. Rows written before accounts belong
  // to the single-account form's account, `default`. The desired state's key gains the account, which
  // SQLite can only do by rebuilding the table.
  `ALTER TABLE actions ADD COLUMN account TEXT NOT NULL DEFAULT 'default';
   DROP INDEX actions_target;
   CREATE INDEX actions_target ON actions (account, action, server_id, ip, created_at);
   CREATE INDEX actions_account_created ON actions (account, created_at);
   CREATE TABLE firewall_desired_v3 (
     account TEXT NOT NULL,
     server_id TEXT NOT NULL,
     ip TEXT NOT NULL,
     desired_state TEXT NOT NULL,
     due_at INTEGER NOT NULL,
     pending INTEGER NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     applied_state TEXT,
     applied_at INTEGER,
     cooldown_ms INTEGER NOT NULL,
     missing_since INTEGER,
     PRIMARY KEY (account, server_id, ip)
   );
   INSERT INTO firewall_desired_v3 (account, server_id, ip, desired_state, due_at, pending, attempts, applied_state,
       applied_at, cooldown_ms, missing_since)
     SELECT 'default', server_id, ip, desired_state, due_at, pending, attempts, applied_state, applied_at, cooldown_ms,
       missing_since FROM firewall_desired;
   DROP TABLE firewall_desired;
   ALTER TABLE firewall_desired_v3 RENAME TO firewall_desired;`,
  // 4: principals: who asked for each row (and why, when an operator said so), and who asked for a desired
  // firewall state, so its deferred change is journaled under that name. Older rows keep NULL.
  `ALTER TABLE actions ADD COLUMN principal TEXT;
   ALTER TABLE actions ADD COLUMN reason TEXT;
   CREATE INDEX actions_principal ON actions (principal, id);
   ALTER TABLE firewall_desired ADD COLUMN principal TEXT;
   ALTER TABLE actions ADD COLUMN approver TEXT;
   ALTER TABLE actions ADD COLUMN approved_at INTEGER;
   CREATE INDEX actions_awaiting ON actions (account, decision) WHERE decision = 'awaiting_approval';`,
  // 5: the circuit breaker of each account (remediation.safety.circuit_breaker), open until an operator
  // closes it: it must survive a restart.
  `CREATE TABLE circuit_breakers (
     account TEXT PRIMARY KEY,
     opened_at INTEGER,
     closed_at INTEGER,
     message TEXT
   );`,
  // 6: an alert's labels (bounded JSON) and status, so that `remediation replay` can decide on it again.
  `ALTER TABLE actions ADD COLUMN labels TEXT;
   ALTER TABLE actions ADD COLUMN alert_status TEXT;`,
  // 7: an operator's power call forced past the attack guard, so that its approval decides on it forced too.
  `ALTER TABLE actions ADD COLUMN forced INTEGER NOT NULL DEFAULT 0;`,
  // 8: what a request was made with (its rule's position and digest, its cooldown, hold and require_owned_ip),
  // so that an approval runs the request as it was made, never a rule looked up again. Older rows keep NULL.
  `ALTER TABLE actions ADD COLUMN rule_index INTEGER;
   ALTER TABLE actions ADD COLUMN rule_digest TEXT;
   ALTER TABLE actions ADD COLUMN cooldown_ms INTEGER;
   ALTER TABLE actions ADD COLUMN hold_ms INTEGER;
   ALTER TABLE actions ADD COLUMN require_owned_ip INTEGER;`,
  // 9: the approver's or denier's own reason (it was journaled nowhere, or only inside the message), and an
  // expired row keeps no approval time (it was given one, with no approver).
  `ALTER TABLE actions ADD COLUMN approver_reason TEXT;
   UPDATE actions SET approved_at = NULL WHERE decision = 'expired' AND approver IS NULL;`,
  // 10: verification (issue 41): the rule's verify_within and its ladder step, recorded with the request, and
  // the outcome (verified, ineffective) with its time; the leader reads the executed rows still verifying.
  `ALTER TABLE actions ADD COLUMN verify_within_ms INTEGER;
   ALTER TABLE actions ADD COLUMN verification TEXT;
   ALTER TABLE actions ADD COLUMN verified_at INTEGER;
   ALTER TABLE actions ADD COLUMN ladder_step INTEGER;
   CREATE INDEX actions_verifying ON actions (account, id)
     WHERE decision = 'executed' AND verify_within_ms IS NOT NULL AND verification IS NULL;`,
  // 11: what the outage gate read for a decision (JSON; issue 49) and the evidence a verification settled on, so
  // that `remediation replay` reads them again instead of asking an Alertmanager. Older rows keep NULL.
  `ALTER TABLE actions ADD COLUMN gate TEXT;
   ALTER TABLE actions ADD COLUMN verification_evidence TEXT;`,
];

/**
 * Why the file at `path` must not be opened as a journal, or undefined when it may (it is a SQLite
 * database, or it does not exist yet). A zero-length file is refused: SQLite would silently start a new,
 * empty database in it, losing every delivery key and pending change.
 */
export function refuseFile(path: string): string | undefined {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (size === 0) return `${path} is empty (zero length), not a SQLite database; move it away to start a new journal`;
  const head = Buffer.alloc(SQLITE_HEADER.length);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  if (!head.equals(SQLITE_HEADER))
    return `${path} is not a SQLite database (wrong file header); move it away to start a new journal`;
  return undefined;
}

/** Opens `path` (`:memory:` for tests), checks it and applies the migrations. Throws on any failure. */
export function openDatabase(path: string): DatabaseSync {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true });
    const refused = refuseFile(path);
    if (refused) throw new Error(refused);
  }
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;');
    // A truncated or damaged file may pass the header check; quick_check reads every page once.
    const check = db.prepare('PRAGMA quick_check(1)').get() as { quick_check?: unknown } | undefined;
    if (check?.quick_check !== 'ok') throw new Error(`integrity check failed: ${String(check?.quick_check)}`);
    const version = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version);
    if (version > MIGRATIONS.length)
      throw new Error(`schema version ${version} is newer than this exporter knows (${MIGRATIONS.length})`);
    for (let v = version; v < MIGRATIONS.length; v++) {
      db.exec('BEGIN IMMEDIATE');
      try {
        db.exec(MIGRATIONS[v]!);
        db.exec(`PRAGMA user_version = ${v + 1}`);
        db.exec('COMMIT');
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
    }
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
