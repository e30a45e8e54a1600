-- The runtime's own tables, as the nineteen migrations of the single list that came before
-- per-component migrations left them (a database made by that list is adopted as having this
-- baseline applied: runtime/migrate.c). workspace_id is plain text here: the runtime knows no
-- API's tables, so nothing refers to workspaces (databases adopted from the old list keep the
-- references they were made with).

-- Rate limits (runtime/ratelimit.c): each key's theoretical arrival time (GCRA), so quotas
-- spent before a restart still count.
CREATE TABLE ratelimit_state (
    key TEXT PRIMARY KEY,
    tat_ns INTEGER NOT NULL
);

-- Idempotent retries (runtime/idempotency.c): the first answer to a key, replayed to a retry
-- that sends the same request, until it expires.
CREATE TABLE idempotency_keys (
    workspace_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status INTEGER NOT NULL,
    content_type TEXT,
    headers TEXT NOT NULL,
    body BLOB NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, user_id, method, path, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

-- The outbox (runtime/outbox.c): every state change writes a domain event in the changing
-- transaction (webhooks deliver from it). seq, the table's own key (INTEGER PRIMARY KEY),
-- numbers them in commit order. No index on delivered_at: no query reads one yet, and a
-- deliverer brings the index it reads (every b-tree costs each commit a leaf page).
CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    type TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    resource_version INTEGER NOT NULL,
    data TEXT NOT NULL,
    request_id TEXT NOT NULL,
    idempotency_key TEXT,
    created_at TEXT NOT NULL,
    delivered_at TEXT
);
CREATE UNIQUE INDEX events_id_idx ON events (id);
CREATE INDEX events_resource_idx ON events (resource_id, seq);

-- The audit trail (runtime/audit.c): records chained by hash per workspace (tamper evidence:
-- runtime/audit.h). WITHOUT ROWID: stored in (workspace_id, seq) order, the key it is read by,
-- instead of a rowid table plus an index on that key.
CREATE TABLE audit_events (
    workspace_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    action TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    before_status TEXT,
    after_status TEXT,
    detail TEXT,
    request_id TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (workspace_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX audit_events_id_idx ON audit_events (id);

-- E-mail (runtime/mail.c): messages leave through an outbox written in the transaction that
-- sends them; the deliverer sends them after the commit and clears the body (it may hold a
-- one-time token) once delivered or given up. Times it compares are Unix milliseconds.
CREATE TABLE mail_outbox (
    id TEXT PRIMARY KEY,
    recipient TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT,
    status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL,
    last_error TEXT,
    created_at TEXT NOT NULL,
    sent_at TEXT
);
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_ms) WHERE status = 'queued';
