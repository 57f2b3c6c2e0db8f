"""The staging database's schema, as numbered migrations recorded in the database itself.

Each migration runs once, in its own transaction, and is recorded in ``schema_migrations``;
a database whose newest migration is unknown to this memsync is refused, not guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "providers, records, links, link state, journal, outbox, runs, skipped, cursors, conflicts",
        """
        CREATE TABLE providers (
            name TEXT PRIMARY KEY,
            type TEXT NOT NULL,
            identity TEXT NOT NULL,
            first_seen TEXT NOT NULL,
            last_cycle TEXT  -- JSON summary of the provider's last cycle, for status
        );

        -- The mirror: each provider's memories as last listed.
        CREATE TABLE records (
            provider TEXT NOT NULL,
            provider_id TEXT NOT NULL,
            link_id TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata TEXT NOT NULL,
            scope_key TEXT NOT NULL DEFAULT '',
            created_at TEXT,
            updated_at TEXT,
            version TEXT,
            provenance TEXT NOT NULL DEFAULT '{}',
            origin TEXT,
            content_hash TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            fp_version INTEGER NOT NULL,
            seen_run INTEGER NOT NULL,
            PRIMARY KEY (provider, provider_id)
        ) WITHOUT ROWID;
        CREATE INDEX records_by_link ON records (link_id, provider);

        -- What memsync last reconciled for each logical memory in each provider: the base
        -- the planner compares both sides against (a change on both = a conflict).
        CREATE TABLE links (
            link_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            provider_id TEXT,
            fingerprint TEXT,
            content_hash TEXT,
            synced_at TEXT NOT NULL,
            PRIMARY KEY (link_id, provider)
        ) WITHOUT ROWID;
        CREATE INDEX links_by_provider ON links (provider, provider_id);

        -- The version of each logical memory memsync last agreed on across providers: a
        -- provider whose base differs from it is behind (a write to it failed or is pending).
        CREATE TABLE link_state (
            link_id TEXT PRIMARY KEY,
            fingerprint TEXT,
            content_hash TEXT,
            deleted INTEGER NOT NULL DEFAULT 0,
            version_at TEXT,  -- the agreed version's own updated_at (or when it was deleted)
            updated_at TEXT NOT NULL
        ) WITHOUT ROWID;

        -- The change journal: every version of every memory seen, append-only.
        CREATE TABLE changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER,
            at TEXT NOT NULL,
            provider TEXT NOT NULL,
            provider_id TEXT NOT NULL,
            link_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('added', 'changed', 'removed', 'written')),
            content TEXT,
            metadata TEXT,
            scope_key TEXT,
            created_at TEXT,
            updated_at TEXT,
            version TEXT,
            provenance TEXT,
            fingerprint TEXT,
            content_hash TEXT,
            origin TEXT
        );
        CREATE INDEX changes_by_link ON changes (link_id, seq);
        CREATE INDEX changes_by_provider ON changes (provider, seq);
        CREATE INDEX changes_by_run ON changes (run_id, provider);

        -- Replay actions and their outcome, recorded before the next action runs.
        CREATE TABLE outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL,
            link_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            kind TEXT NOT NULL,
            provider_id TEXT,
            payload TEXT,
            state TEXT NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'running', 'done', 'failed', 'dead', 'superseded')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_attempt_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        -- Indexes leave out the state a finished action moves through, so marking one done
        -- rewrites one row, not three index entries (that write happens once per action).
        CREATE INDEX outbox_by_run ON outbox (run_id, provider, id);
        CREATE INDEX outbox_by_link ON outbox (link_id, provider);
        CREATE INDEX outbox_needing_attention ON outbox (state) WHERE state IN ('failed', 'dead');

        CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL DEFAULT 'running',
            pid INTEGER,
            summary TEXT
        );

        -- Records a provider listed but memsync did not carry, with why (empty content...).
        CREATE TABLE skipped (
            run_id INTEGER NOT NULL,
            provider TEXT NOT NULL,
            provider_id TEXT NOT NULL,
            reason TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (run_id, provider, provider_id)
        ) WITHOUT ROWID;

        CREATE TABLE cursors (
            provider TEXT PRIMARY KEY,
            cursor TEXT,
            full_scan_at TEXT,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE conflicts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            link_id TEXT NOT NULL,
            run_id INTEGER,
            policy TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'open'
                CHECK (state IN ('open', 'resolving', 'resolved')),
            winner TEXT,
            versions TEXT NOT NULL,  -- JSON: provider -> the version each side held
            created_at TEXT NOT NULL,
            resolved_at TEXT,
            resolution TEXT
        );
        CREATE INDEX conflicts_by_state ON conflicts (state, link_id);
        """,
    ),
    Migration(
        2,
        "lossless: expiration dates travel; refresh texts staged in normalised form",
        """
        ALTER TABLE records ADD COLUMN expiration_date TEXT;
        ALTER TABLE changes ADD COLUMN expiration_date TEXT;
        -- Texts staged before this migration were NFC-normalised and stripped. Forgetting the
        -- version tokens makes the next mirror compare fingerprints (computed over the
        -- normalised text, so unchanged) and take each provider's exact bytes without
        -- journaling a change or writing to any target.
        UPDATE records SET version = NULL;
        """,
    ),
    Migration(
        3,
        "adoptions: records linked by content to a copy another provider already held",
        """
        -- Append-only, like the change journal: each row says that a provider's record, seen
        -- under its own logical id (old_link_id), joined another memory because the two held
        -- the same text in the same scope before memsync linked them.
        CREATE TABLE adoptions (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER,
            at TEXT NOT NULL,
            link_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            provider_id TEXT NOT NULL,
            old_link_id TEXT NOT NULL,
            from_provider TEXT,
            from_provider_id TEXT,
            scope_key TEXT,
            content_hash TEXT NOT NULL
        );
        CREATE INDEX adoptions_by_link ON adoptions (link_id, seq);
        CREATE INDEX adoptions_by_old_link ON adoptions (old_link_id);
        """,
    ),
    Migration(
        4,
        "verify results, for the status page's cutover readiness",
        """
        -- Every `memsync verify A B` (command line or status page) and what it found.
        CREATE TABLE verify_results (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            a TEXT NOT NULL,
            b TEXT NOT NULL,
            at TEXT NOT NULL,
            reconciled INTEGER NOT NULL,
            count_a INTEGER,
            count_b INTEGER,
            differences INTEGER NOT NULL DEFAULT 0,
            error TEXT,  -- why verify could not compare (a partial listing, a provider down)
            journal_seq INTEGER NOT NULL DEFAULT 0  -- the newest change seen before it ran
        );
        CREATE INDEX verify_results_by_pair ON verify_results (a, b, id);
        """,
    ),
    Migration(
        5,
        "CHECK constraints on every column holding a closed set of values",
        """
        -- SQLite adds no CHECK to an existing table: each table is rebuilt (new table, copy,
        -- drop, rename, indexes again) inside this migration's transaction, so a failure
        -- leaves the old tables as they were. The sets are every value any memsync wrote:
        -- a run that never finished stays 'running'; a conflict chosen by hand is
        -- 'resolving' until a cycle applies it. providers.type is left open on purpose: each
        -- release may add a provider type, and that must not need a migration.
        -- AUTOINCREMENT tables keep their high-water mark, so ids of pruned rows (the outbox
        -- forgets finished actions) are never handed out again.

        CREATE TABLE outbox_checked (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL,
            link_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('create', 'update', 'delete')),
            provider_id TEXT,
            payload TEXT,
            state TEXT NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'running', 'done', 'failed', 'dead', 'superseded')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_attempt_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        INSERT INTO outbox_checked (id, run_id, link_id, provider, kind, provider_id, payload,
            state, attempts, last_error, next_attempt_at, created_at, updated_at)
        SELECT id, run_id, link_id, provider, kind, provider_id, payload, state, attempts,
            last_error, next_attempt_at, created_at, updated_at
        FROM outbox ORDER BY id;
        DELETE FROM sqlite_sequence WHERE name = 'outbox_checked';
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'outbox_checked', seq FROM sqlite_sequence WHERE name = 'outbox';
        DROP TABLE outbox;
        ALTER TABLE outbox_checked RENAME TO outbox;
        CREATE INDEX outbox_by_run ON outbox (run_id, provider, id);
        CREATE INDEX outbox_by_link ON outbox (link_id, provider);
        CREATE INDEX outbox_needing_attention ON outbox (state) WHERE state IN ('failed', 'dead');

        CREATE TABLE conflicts_checked (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            link_id TEXT NOT NULL,
            run_id INTEGER,
            policy TEXT NOT NULL CHECK (policy IN ('error', 'active', 'newest', 'keep-both')),
            state TEXT NOT NULL DEFAULT 'open'
                CHECK (state IN ('open', 'resolving', 'resolved')),
            winner TEXT,
            versions TEXT NOT NULL,  -- JSON: provider -> the version each side held
            created_at TEXT NOT NULL,
            resolved_at TEXT,
            resolution TEXT
        );
        INSERT INTO conflicts_checked (id, link_id, run_id, policy, state, winner, versions,
            created_at, resolved_at, resolution)
        SELECT id, link_id, run_id, policy, state, winner, versions, created_at, resolved_at,
            resolution
        FROM conflicts ORDER BY id;
        DELETE FROM sqlite_sequence WHERE name = 'conflicts_checked';
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'conflicts_checked', seq FROM sqlite_sequence WHERE name = 'conflicts';
        DROP TABLE conflicts;
        ALTER TABLE conflicts_checked RENAME TO conflicts;
        CREATE INDEX conflicts_by_state ON conflicts (state, link_id);

        CREATE TABLE runs_checked (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'ok', 'attention', 'interrupted')),
            pid INTEGER,
            summary TEXT
        );
        INSERT INTO runs_checked (id, started_at, finished_at, status, pid, summary)
        SELECT id, started_at, finished_at, status, pid, summary FROM runs ORDER BY id;
        DELETE FROM sqlite_sequence WHERE name = 'runs_checked';
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'runs_checked', seq FROM sqlite_sequence WHERE name = 'runs';
        DROP TABLE runs;
        ALTER TABLE runs_checked RENAME TO runs;

        CREATE TABLE link_state_checked (
            link_id TEXT PRIMARY KEY,
            fingerprint TEXT,
            content_hash TEXT,
            deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
            version_at TEXT,  -- the agreed version's own updated_at (or when it was deleted)
            updated_at TEXT NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO link_state_checked (link_id, fingerprint, content_hash, deleted, version_at,
            updated_at)
        SELECT link_id, fingerprint, content_hash, deleted, version_at, updated_at
        FROM link_state ORDER BY link_id;
        DROP TABLE link_state;
        ALTER TABLE link_state_checked RENAME TO link_state;

        CREATE TABLE verify_results_checked (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            a TEXT NOT NULL,
            b TEXT NOT NULL,
            at TEXT NOT NULL,
            reconciled INTEGER NOT NULL CHECK (reconciled IN (0, 1)),
            count_a INTEGER,
            count_b INTEGER,
            differences INTEGER NOT NULL DEFAULT 0,
            error TEXT,  -- why verify could not compare (a partial listing, a provider down)
            journal_seq INTEGER NOT NULL DEFAULT 0  -- the newest change seen before it ran
        );
        INSERT INTO verify_results_checked (id, a, b, at, reconciled, count_a, count_b,
            differences, error, journal_seq)
        SELECT id, a, b, at, reconciled, count_a, count_b, differences, error, journal_seq
        FROM verify_results ORDER BY id;
        DELETE FROM sqlite_sequence WHERE name = 'verify_results_checked';
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'verify_results_checked', seq FROM sqlite_sequence
            WHERE name = 'verify_results';
        DROP TABLE verify_results;
        ALTER TABLE verify_results_checked RENAME TO verify_results;
        CREATE INDEX verify_results_by_pair ON verify_results (a, b, id);
        """,
    ),
    Migration(
        6,
        "probe tokens: what a remote store's change probe answered per scope when last listed",
        """
        CREATE TABLE IF NOT EXISTS probe_tokens (
            provider TEXT NOT NULL,  -- the configured provider's name
            scope TEXT NOT NULL,  -- the scope's label; '' for a provider of one scope
            token TEXT NOT NULL,  -- the probe's answer for the scope, before memsync listed it
            seen_at TEXT NOT NULL,
            PRIMARY KEY (provider, scope)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        7,
        "excluded records: what a provider's exclude covers, never planned (memsync.base.exclude)",
        """
        -- Records a provider's exclude covers, listed or staged, with the memory key they are
        -- (or would be) linked as: a memory with such a key is never planned.
        CREATE TABLE IF NOT EXISTS excluded_records (
            provider TEXT NOT NULL,
            provider_id TEXT NOT NULL,
            link_id TEXT NOT NULL,
            since TEXT NOT NULL,
            PRIMARY KEY (provider, provider_id)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS excluded_records_by_link ON excluded_records (link_id);
        -- The rule each provider's rows were found with (memsync.base.exclude.Exclusion.key).
        CREATE TABLE IF NOT EXISTS exclude_rules (
            provider TEXT PRIMARY KEY,
            rule TEXT NOT NULL,
            since TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        8,
        "rollbacks: memories a store went back in time on, held until the user settles them",
        """
        -- A store that answers an older version of a memory than one memsync had seen from
        -- it (its updated_at went backwards, or it answers a version memsync saw superseded)
        -- was rolled back (a restore, a lost write): that version is not copied anywhere
        -- until the user says which one stands. listed_updated_at NULL: the memory is gone
        -- from a store that went back in time.
        CREATE TABLE rollbacks (
            provider TEXT NOT NULL,
            link_id TEXT NOT NULL,
            provider_id TEXT NOT NULL,
            seen_updated_at TEXT,
            listed_updated_at TEXT,
            run_id INTEGER,
            at TEXT NOT NULL,
            PRIMARY KEY (provider, link_id)
        ) WITHOUT ROWID;
        -- A conflict that is a rollback names the store that went back in time.
        ALTER TABLE conflicts ADD COLUMN rolled_back TEXT;
        """,
    ),
    Migration(
        9,
        "store commits: what memsync read or made of a versioned store's commits (mnem)",
        """
        -- A commit of a versioned store (mnem) as memsync read it or made it: its time and
        -- which nodes it wrote or forgot, so that no commit is read from the store twice
        -- (staging/store_commits.py). A cache: a row lost costs a read, never a memory.
        CREATE TABLE store_commits (
            store TEXT NOT NULL,  -- the store's identity (its path and branch)
            commit_id TEXT NOT NULL,
            time_ms INTEGER NOT NULL,  -- the commit's own time (a backdated one's too)
            changes TEXT NOT NULL,  -- JSON: {"made": {node: version}, "removed": [...], ...}
            kept_at REAL NOT NULL,  -- when memsync kept it (Unix seconds)
            PRIMARY KEY (store, commit_id)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        10,
        "write-backs held until they land; webhook registrations and their health (issue 39)",
        """
        -- A record an agent rewrote through its store's own API, whose memsync fields the
        -- store lost, is written back with them; held here until that write lands, so every
        -- cycle (an incremental one too) queues it again (memsync.staging.write_backs).
        CREATE TABLE write_backs (
            provider TEXT NOT NULL,
            link_id TEXT NOT NULL,
            since TEXT NOT NULL,
            PRIMARY KEY (provider, link_id)
        ) WITHOUT ROWID;
        -- Where memsync registered for a store's pushed changes (the Platform's webhooks),
        -- the URL with its secret masked, and how the events are arriving as the daemon
        -- last noted it (memsync.staging.webhooks).
        CREATE TABLE webhooks (
            provider TEXT PRIMARY KEY,
            subscription_id TEXT NOT NULL,
            place TEXT,
            url TEXT NOT NULL,
            registered_at TEXT NOT NULL,
            state TEXT,
            last_event_at TEXT,
            events TEXT NOT NULL DEFAULT '{}',
            missed INTEGER NOT NULL DEFAULT 0,
            rejected INTEGER NOT NULL DEFAULT 0,
            probe_every REAL,
            noted_at TEXT
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        11,
        "thousands of scopes: unfinished actions, hidden records and discoveries indexed",
        """
        -- Every cycle supersedes the unfinished actions of earlier runs: without this index
        -- that scanned the outbox a first sync filled (200,000 rows at 5,000 users: half of
        -- a hinted cycle).
        CREATE INDEX outbox_unfinished ON outbox (run_id) WHERE state IN ('pending', 'running');
        -- What status counts as hidden (an expiry or a Dream state): a few rows, not a scan of
        -- every record with its provenance parsed (the same terms as status_counts' query).
        CREATE INDEX records_maybe_hidden ON records (provider, scope_key)
            WHERE expiration_date IS NOT NULL
            OR json_extract(provenance, '$.lifecycle_state') IS NOT NULL
            OR json_extract(provenance, '$.replaced_by') IS NOT NULL;
        -- What each source's discovery found, apart from the run's report: status and /metrics
        -- read it at every look, and a full pass's report over 5,000 scopes is 6 MB of JSON.
        ALTER TABLE runs ADD COLUMN discovery TEXT;
        UPDATE runs SET discovery = json_extract(summary, '$.discovery')
            WHERE finished_at IS NOT NULL AND json_valid(summary)
            AND json_type(summary, '$.discovery') = 'object';
        CREATE INDEX runs_with_discovery ON runs (id) WHERE discovery IS NOT NULL;
        """,
    ),
    Migration(
        12,
        "store sizes: what each mnem provider's stores take on disk, sampled as cycles end",
        """
        -- mnem keeps every commit's state: a store grows with every commit. Sampled at most
        -- once a minute per provider, kept for two days, for the growth rate status shows.
        CREATE TABLE store_sizes (
            provider TEXT NOT NULL,
            at TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            stores INTEGER NOT NULL,
            PRIMARY KEY (provider, at)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        13,
        "thousands of scopes: records counted by scope from an index, last cycles summed in SQL",
        """
        -- Status counts each scope's records at every look (the page polls every 5 s): from
        -- this index, not a scan of every record (at 5,000 users: 43 ms, not 155 ms).
        CREATE INDEX records_by_scope ON records (provider, scope_key);
        -- A cycle summary's figures as columns SQLite keeps from the JSON itself, so status
        -- sums a team's plain cycles in SQL (``cycle_groups``) instead of parsing 15,000 of
        -- them in Python at each look; only a cycle in trouble is read whole. Made from the
        -- JSON on every write, they cannot disagree with it. STORED columns cannot be added
        -- by ALTER TABLE: the table is made again, its rows copied in their order.
        CREATE TABLE providers_with_cycles (
            name TEXT PRIMARY KEY,
            type TEXT NOT NULL,
            identity TEXT NOT NULL,
            first_seen TEXT NOT NULL,
            last_cycle TEXT,  -- JSON summary of the provider's last cycle, for status
            cycle_state AS (json_extract(last_cycle, '$.state')) STORED,
            cycle_finished_at AS (json_extract(last_cycle, '$.finished_at')) STORED,
            cycle_run_id AS (json_extract(last_cycle, '$.run_id')) STORED,
            cycle_complete AS (json_extract(last_cycle, '$.complete')) STORED,
            cycle_added AS (json_extract(last_cycle, '$.added')) STORED,
            cycle_changed AS (json_extract(last_cycle, '$.changed')) STORED,
            cycle_removed AS (json_extract(last_cycle, '$.removed')) STORED,
            cycle_listed AS (json_extract(last_cycle, '$.listed')) STORED,
            cycle_written AS (json_extract(last_cycle, '$.written')) STORED,
            cycle_failed AS (json_extract(last_cycle, '$.failed')) STORED,
            cycle_excluded AS (json_extract(last_cycle, '$.excluded')) STORED,
            cycle_synced_at AS (json_extract(last_cycle, '$.synced_at')) STORED,
            cycle_unsynced_since AS (json_extract(last_cycle, '$.unsynced_since')) STORED,
            cycle_busy_since AS (json_extract(last_cycle, '$.busy_since')) STORED,
            cycle_outside AS (CASE json_type(last_cycle, '$.outside')
                WHEN 'integer' THEN json_extract(last_cycle, '$.outside')
                WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) STORED,
            -- ok or skipped, and no copies kept out: what a fold only sums
            cycle_plain AS (json_extract(last_cycle, '$.state') IN ('ok', 'skipped')
                AND (json_type(last_cycle, '$.excluded_copies') IS NULL
                    OR json_type(last_cycle, '$.excluded_copies') = 'null'
                    OR json_extract(last_cycle, '$.excluded_copies') = '{}')) STORED
        );
        INSERT INTO providers_with_cycles (name, type, identity, first_seen, last_cycle)
            SELECT name, type, identity, first_seen, last_cycle FROM providers ORDER BY rowid;
        DROP TABLE providers;
        ALTER TABLE providers_with_cycles RENAME TO providers;
        """,
    ),
)

LATEST = MIGRATIONS[-1].version
