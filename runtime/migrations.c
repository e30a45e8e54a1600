/* Schema migrations, oldest first. A migration that has landed on main is never edited or
 * removed: databases in the field already ran it. Change the schema by appending a new one. */
#include "runtime/migrations.h"

/* Listing order is (created_at, id): created_at has millisecond resolution and ids are
 * unique, so the pair is a total order and a cursor holding both is stable without a
 * separate insertion counter. */
static const char initial_sql[] =
    "CREATE TABLE workspaces (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    name TEXT NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL,\n"
    "    rate_limit_per_minute INTEGER NOT NULL DEFAULT 1000,\n"
    "    token_lifetime_seconds INTEGER NOT NULL DEFAULT 86400\n"
    ");\n"
    "CREATE TABLE users (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    email TEXT NOT NULL,\n"
    "    email_norm TEXT NOT NULL UNIQUE CHECK (email_norm = lower(email_norm)),\n"
    "    password_hash TEXT NOT NULL,\n"
    "    status TEXT NOT NULL DEFAULT 'active'\n"
    "        CHECK (status IN ('invited', 'active', 'suspended', 'deactivated')),\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL,\n"
    "    last_login_at TEXT\n"
    ");\n"
    "CREATE TABLE members (\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    user_id TEXT NOT NULL REFERENCES users(id),\n"
    "    role TEXT NOT NULL CHECK (role IN ('owner', 'viewer')),\n"
    "    created_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (workspace_id, user_id)\n"
    ");\n"
    "CREATE INDEX members_user_idx ON members (user_id);\n"
    "CREATE TABLE sessions (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    user_id TEXT NOT NULL REFERENCES users(id),\n"
    "    refresh_token_hash TEXT NOT NULL UNIQUE,\n"
    "    created_at TEXT NOT NULL,\n"
    "    expires_at TEXT NOT NULL,\n"
    "    revoked_at TEXT\n"
    ");\n"
    "CREATE INDEX sessions_user_idx ON sessions (user_id);\n"
    "CREATE INDEX sessions_workspace_idx ON sessions (workspace_id);\n"
    "CREATE TABLE beneficiaries (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    name TEXT NOT NULL,\n"
    "    account_holder_name TEXT NOT NULL,\n"
    "    scheme TEXT NOT NULL,\n"
    "    identification TEXT NOT NULL,\n"
    "    bank_bic TEXT,\n"
    "    bank_routing_number TEXT,\n"
    "    bank_name TEXT,\n"
    "    bank_country TEXT,\n"
    "    currency TEXT NOT NULL,\n"
    "    country TEXT NOT NULL,\n"
    "    beneficiary_type TEXT NOT NULL,\n"
    "    counterparty_id TEXT,\n"
    "    external_id TEXT,\n"
    "    email TEXT,\n"
    "    status TEXT NOT NULL,\n"
    "    verification_status TEXT NOT NULL,\n"
    "    approval_status TEXT NOT NULL,\n"
    "    metadata TEXT NOT NULL DEFAULT '{}',\n"
    "    version INTEGER NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL,\n"
    "    UNIQUE (workspace_id, external_id)\n"
    ");\n"
    "CREATE INDEX beneficiaries_list_idx\n"
    "    ON beneficiaries (workspace_id, created_at DESC, id DESC);\n";

/* Rate limits and idempotent retries (runtime/ratelimit.c, runtime/idempotency.c).
 * A workspace's quota is the server's configured default unless an operator set its own
 * (`admin set-rate-limit`): the column becomes a nullable override instead of a copy of a
 * default that could never follow a change of the configuration. */
static const char ratelimit_idempotency_sql[] =
    "ALTER TABLE workspaces DROP COLUMN rate_limit_per_minute;\n"
    "ALTER TABLE workspaces ADD COLUMN rate_limit_per_minute INTEGER\n"
    "    CHECK (rate_limit_per_minute IS NULL OR rate_limit_per_minute BETWEEN 1 AND 1000000000);\n"
    "CREATE TABLE ratelimit_state (\n"
    "    key TEXT PRIMARY KEY,\n"
    "    tat_ns INTEGER NOT NULL\n"
    ");\n"
    "CREATE TABLE idempotency_keys (\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    user_id TEXT NOT NULL,\n"
    "    method TEXT NOT NULL,\n"
    "    path TEXT NOT NULL,\n"
    "    key TEXT NOT NULL,\n"
    "    fingerprint TEXT NOT NULL,\n"
    "    status INTEGER NOT NULL,\n"
    "    content_type TEXT,\n"
    "    headers TEXT NOT NULL,\n"
    "    body BLOB NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    expires_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (workspace_id, user_id, method, path, key)\n"
    ");\n"
    "CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);\n";

/* Sessions as refresh-token families (RFC 9700 §4.14.2): every refresh token ever issued is
 * kept (hashed) with the moment it was used, so presenting a used one is recognised as reuse
 * and revokes its session. A session remembers the scope originally granted; a refresh may
 * narrow it, never widen it. Workspaces get a version for ETag / If-Match on their settings. */
static const char sessions_refresh_sql[] =
    "ALTER TABLE sessions ADD COLUMN scope TEXT NOT NULL DEFAULT '';\n"
    "ALTER TABLE sessions ADD COLUMN last_used_at TEXT;\n"
    "ALTER TABLE sessions ADD COLUMN revoked_reason TEXT;\n"
    "CREATE TABLE refresh_tokens (\n"
    "    token_hash TEXT PRIMARY KEY,\n"
    "    session_id TEXT NOT NULL REFERENCES sessions(id),\n"
    "    created_at TEXT NOT NULL,\n"
    "    used_at TEXT\n"
    ");\n"
    "CREATE INDEX refresh_tokens_session_idx ON refresh_tokens (session_id);\n"
    "CREATE INDEX sessions_revoked_idx ON sessions (revoked_at);\n"
    "ALTER TABLE workspaces ADD COLUMN version INTEGER NOT NULL DEFAULT 1;\n";

/* Roles that grant scopes: the built-in ones are in the spec (x-roles, generated/scopes.c);
 * workspaces add their own here. members.role loses its CHECK (owner|viewer): a role is now
 * any built-in key or a custom role of the member's workspace, checked by the code that
 * assigns it. SQLite cannot drop a CHECK, so members is rebuilt. */
static const char roles_sql[] =
    "CREATE TABLE roles (\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    key TEXT NOT NULL,\n"
    "    name TEXT NOT NULL,\n"
    "    description TEXT,\n"
    "    scopes TEXT NOT NULL,\n"
    "    version INTEGER NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (workspace_id, key)\n"
    ");\n"
    "CREATE TABLE members_rebuilt (\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    user_id TEXT NOT NULL REFERENCES users(id),\n"
    "    role TEXT NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (workspace_id, user_id)\n"
    ");\n"
    "INSERT INTO members_rebuilt (workspace_id, user_id, role, created_at)\n"
    "    SELECT workspace_id, user_id, role, created_at FROM members;\n"
    "DROP TABLE members;\n"
    "ALTER TABLE members_rebuilt RENAME TO members;\n"
    "CREATE INDEX members_user_idx ON members (user_id);\n";

/* Service accounts: non-human principals of a workspace, holding a role; their tokens carry
 * an explicit subset of the role's scopes, never expire and are revoked one by one (or all at
 * once by disabling the account). A token is stored by id only: its text is shown once. */
static const char service_accounts_sql[] =
    "CREATE TABLE service_accounts (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    name TEXT NOT NULL,\n"
    "    description TEXT,\n"
    "    role TEXT NOT NULL,\n"
    "    status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),\n"
    "    version INTEGER NOT NULL,\n"
    "    created_by TEXT NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL,\n"
    "    disabled_at TEXT\n"
    ");\n"
    "CREATE INDEX service_accounts_list_idx\n"
    "    ON service_accounts (workspace_id, created_at DESC, id DESC);\n"
    "CREATE TABLE service_account_tokens (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    service_account_id TEXT NOT NULL REFERENCES service_accounts(id),\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    name TEXT,\n"
    "    scope TEXT NOT NULL,\n"
    "    created_by TEXT NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    revoked_at TEXT\n"
    ");\n"
    "CREATE INDEX service_account_tokens_list_idx\n"
    "    ON service_account_tokens (service_account_id, created_at DESC, id DESC);\n";

/* Invitations: an admin invites an email with a role; the one-time token (shown to the
 * inviter once, stored as SHA-256) lets its holder complete the signup within 7 days. A new
 * invitation for the same email and workspace supersedes the pending one. Users get a name. */
static const char invitations_sql[] =
    "ALTER TABLE users ADD COLUMN name TEXT;\n"
    "ALTER TABLE members ADD COLUMN invited_by TEXT;\n"
    "CREATE TABLE invitations (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    email TEXT NOT NULL,\n"
    "    email_norm TEXT NOT NULL,\n"
    "    role TEXT NOT NULL,\n"
    "    token_hash TEXT NOT NULL UNIQUE,\n"
    "    status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'superseded')),\n"
    "    invited_by TEXT NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    expires_at TEXT NOT NULL,\n"
    "    accepted_at TEXT,\n"
    "    user_id TEXT\n"
    ");\n"
    "CREATE INDEX invitations_email_idx ON invitations (workspace_id, email_norm);\n";

/* TOTP multi-factor authentication: the secret sealed (runtime/seal.c), the last accepted
 * time step (a code is accepted once), and one-time recovery codes stored as digests. */
static const char mfa_sql[] =
    "ALTER TABLE users ADD COLUMN mfa_status TEXT NOT NULL DEFAULT 'none'\n"
    "    CHECK (mfa_status IN ('none', 'pending', 'enabled'));\n"
    "ALTER TABLE users ADD COLUMN mfa_secret TEXT;\n"
    "ALTER TABLE users ADD COLUMN mfa_last_step INTEGER NOT NULL DEFAULT 0;\n"
    "CREATE TABLE mfa_recovery_codes (\n"
    "    user_id TEXT NOT NULL REFERENCES users(id),\n"
    "    code_hash TEXT NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    used_at TEXT,\n"
    "    PRIMARY KEY (user_id, code_hash)\n"
    ");\n";

/* Payments with their approvals and approval policy; beneficiaries remember
 * who asked for their approval (no self-approval); roles get per-currency approval limits;
 * every state change writes a domain event to the outbox (webhooks deliver from it) and an
 * audit record chained by hash per workspace (tamper evidence: runtime/audit.h). */
static const char payments_sql[] =
    "ALTER TABLE beneficiaries ADD COLUMN requested_by TEXT;\n"
    "ALTER TABLE roles ADD COLUMN approval_limits TEXT;\n"
    "CREATE TABLE payments (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    amount INTEGER NOT NULL CHECK (amount > 0 AND amount <= 9007199254740991),\n"
    "    currency TEXT NOT NULL,\n"
    "    type TEXT NOT NULL,\n"
    "    priority TEXT NOT NULL,\n"
    "    originating_account TEXT NOT NULL,\n"
    "    beneficiary_id TEXT NOT NULL REFERENCES beneficiaries(id),\n"
    "    effective_date TEXT NOT NULL,\n"
    "    remittance_information TEXT,\n"
    "    external_id TEXT,\n"
    "    status TEXT NOT NULL,\n"
    "    approvals_required INTEGER NOT NULL,\n"
    "    failure_reason TEXT,\n"
    "    created_by TEXT NOT NULL,\n"
    "    metadata TEXT NOT NULL DEFAULT '{}',\n"
    "    version INTEGER NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL,\n"
    "    UNIQUE (workspace_id, external_id)\n"
    ");\n"
    "CREATE INDEX payments_list_idx ON payments (workspace_id, created_at DESC, id DESC);\n"
    "CREATE INDEX payments_status_idx ON payments (status, effective_date);\n"
    "CREATE TABLE payment_approvals (\n"
    "    payment_id TEXT NOT NULL REFERENCES payments(id),\n"
    "    round INTEGER NOT NULL,\n"
    "    user_id TEXT NOT NULL,\n"
    "    decision TEXT NOT NULL CHECK (decision IN ('approved', 'denied')),\n"
    "    reason TEXT,\n"
    "    decided_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (payment_id, round, user_id)\n"
    ");\n"
    "ALTER TABLE payments ADD COLUMN approval_round INTEGER NOT NULL DEFAULT 1;\n"
    "CREATE TABLE approval_policies (\n"
    "    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id),\n"
    "    tiers TEXT NOT NULL,\n"
    "    version INTEGER NOT NULL,\n"
    "    updated_at TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE events (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    type TEXT NOT NULL,\n"
    "    resource_type TEXT NOT NULL,\n"
    "    resource_id TEXT NOT NULL,\n"
    "    resource_version INTEGER NOT NULL,\n"
    "    data TEXT NOT NULL,\n"
    "    request_id TEXT NOT NULL,\n"
    "    idempotency_key TEXT,\n"
    "    created_at TEXT NOT NULL,\n"
    "    seq INTEGER NOT NULL,\n"
    "    delivered_at TEXT\n"
    ");\n"
    "CREATE INDEX events_resource_idx ON events (resource_id, seq);\n"
    "CREATE INDEX events_undelivered_idx ON events (delivered_at, seq);\n"
    "CREATE TABLE audit_events (\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    seq INTEGER NOT NULL,\n"
    "    id TEXT NOT NULL UNIQUE,\n"
    "    occurred_at TEXT NOT NULL,\n"
    "    actor_id TEXT NOT NULL,\n"
    "    action TEXT NOT NULL,\n"
    "    resource_type TEXT NOT NULL,\n"
    "    resource_id TEXT NOT NULL,\n"
    "    before_status TEXT,\n"
    "    after_status TEXT,\n"
    "    detail TEXT,\n"
    "    request_id TEXT NOT NULL,\n"
    "    prev_hash TEXT NOT NULL,\n"
    "    hash TEXT NOT NULL,\n"
    "    PRIMARY KEY (workspace_id, seq)\n"
    ");\n";

/* The settlement worker (handlers/payments_settlement.c): when a payment is next due for a
 * step (Unix ms; NULL when nothing is pending), the rail's reference and the ISO 20022 reason
 * code of a failure or return. Payments approved before this migration are due at once. */
static const char settlement_sql[] =
    "ALTER TABLE payments ADD COLUMN next_step_at INTEGER;\n"
    "ALTER TABLE payments ADD COLUMN rail_reference TEXT;\n"
    "ALTER TABLE payments ADD COLUMN failure_code TEXT;\n"
    "UPDATE payments SET next_step_at = 0 WHERE status IN ('approved', 'scheduled');\n"
    "CREATE INDEX payments_due_idx ON payments (next_step_at) WHERE next_step_at IS NOT NULL;\n";

/* Batches of payments (handlers/payments_batches.c): decided as a whole (batch_approvals), their
 * items are payments with batch_id and their place in the batch. */
static const char batches_sql[] =
    "CREATE TABLE payment_batches (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    status TEXT NOT NULL CHECK (status IN ('pending_approval', 'approved', 'denied', "
    "'cancelled')),\n"
    "    item_count INTEGER NOT NULL CHECK (item_count BETWEEN 1 AND 1000),\n"
    "    approvals_required INTEGER NOT NULL,\n"
    "    created_by TEXT NOT NULL,\n"
    "    external_id TEXT,\n"
    "    metadata TEXT NOT NULL DEFAULT '{}',\n"
    "    version INTEGER NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL,\n"
    "    UNIQUE (workspace_id, external_id)\n"
    ");\n"
    "CREATE TABLE batch_approvals (\n"
    "    batch_id TEXT NOT NULL REFERENCES payment_batches(id),\n"
    "    user_id TEXT NOT NULL,\n"
    "    decision TEXT NOT NULL CHECK (decision IN ('approved', 'denied')),\n"
    "    reason TEXT,\n"
    "    decided_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (batch_id, user_id)\n"
    ");\n"
    "ALTER TABLE payments ADD COLUMN batch_id TEXT REFERENCES payment_batches(id);\n"
    "ALTER TABLE payments ADD COLUMN batch_position INTEGER;\n"
    "CREATE INDEX payments_batch_idx ON payments (batch_id, batch_position) "
    "WHERE batch_id IS NOT NULL;\n";

/* outbox_add() numbers events MAX(seq) + 1: without an index led by seq that is a scan of the
 * whole table per event (17 ms at 300,000 events). Unique, too: one number per event. */
static const char events_seq_sql[] = "CREATE UNIQUE INDEX events_seq_idx ON events (seq);\n";

/* OAuth 2.0 (handlers/accounts_oauth*.c): registered clients, the users' grants to them, single
 * use authorization codes, the authorization pages' browser sessions and pending requests, and
 * sessions bound to the client and grant they were issued for. Secrets, codes and cookies are
 * stored as SHA-256 digests only. Times the code compares are Unix milliseconds. */
static const char oauth_sql[] =
    "CREATE TABLE oauth_clients (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    name TEXT NOT NULL,\n"
    "    type TEXT NOT NULL CHECK (type IN ('public', 'confidential')),\n"
    "    redirect_uris TEXT NOT NULL,\n"
    "    scopes TEXT NOT NULL,\n"
    "    secret_hash TEXT,\n"
    "    status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),\n"
    "    created_by TEXT NOT NULL,\n"
    "    version INTEGER NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL\n"
    ");\n"
    "CREATE INDEX oauth_clients_list_idx ON oauth_clients (workspace_id, created_at DESC, "
    "id DESC);\n"
    "CREATE TABLE oauth_grants (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    user_id TEXT NOT NULL REFERENCES users(id),\n"
    "    client_id TEXT NOT NULL REFERENCES oauth_clients(id),\n"
    "    scope TEXT NOT NULL,\n"
    "    created_at TEXT NOT NULL,\n"
    "    updated_at TEXT NOT NULL,\n"
    "    revoked_at TEXT\n"
    ");\n"
    "CREATE UNIQUE INDEX oauth_grants_active_idx ON oauth_grants (user_id, client_id) "
    "WHERE revoked_at IS NULL;\n"
    "CREATE INDEX oauth_grants_list_idx ON oauth_grants (user_id, workspace_id, created_at DESC, "
    "id DESC);\n"
    "CREATE TABLE oauth_codes (\n"
    "    code_hash TEXT PRIMARY KEY,\n"
    "    client_id TEXT NOT NULL REFERENCES oauth_clients(id),\n"
    "    grant_id TEXT NOT NULL REFERENCES oauth_grants(id),\n"
    "    workspace_id TEXT NOT NULL,\n"
    "    user_id TEXT NOT NULL,\n"
    "    redirect_uri TEXT NOT NULL,\n"
    "    scope TEXT NOT NULL,\n"
    "    code_challenge TEXT NOT NULL,\n"
    "    expires_at INTEGER NOT NULL,\n"
    "    used_at TEXT,\n"
    "    session_id TEXT\n"
    ");\n"
    "CREATE TABLE oauth_browser_sessions (\n"
    "    token_hash TEXT PRIMARY KEY,\n"
    "    csrf TEXT NOT NULL,\n"
    "    user_id TEXT,\n"
    "    pending_email TEXT,\n"
    "    pending_until INTEGER,\n"
    "    created_at TEXT NOT NULL,\n"
    "    expires_at INTEGER NOT NULL\n"
    ");\n"
    "CREATE TABLE oauth_requests (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    browser_hash TEXT NOT NULL,\n"
    "    client_id TEXT NOT NULL REFERENCES oauth_clients(id),\n"
    "    redirect_uri TEXT NOT NULL,\n"
    "    scope TEXT NOT NULL,\n"
    "    state TEXT,\n"
    "    code_challenge TEXT NOT NULL,\n"
    "    expires_at INTEGER NOT NULL,\n"
    "    decided_at TEXT\n"
    ");\n"
    "ALTER TABLE sessions ADD COLUMN client_id TEXT;\n"
    "ALTER TABLE sessions ADD COLUMN grant_id TEXT;\n"
    "CREATE INDEX sessions_grant_idx ON sessions (grant_id) WHERE grant_id IS NOT NULL;\n"
    "CREATE INDEX sessions_client_idx ON sessions (client_id) WHERE client_id IS NOT NULL;\n";

/* Fewer b-trees per write (issue 8): a created payment touched 24, each costing a leaf page in
 * every commit's WAL frames and a copy in the request's savepoint.
 * - payments_status_idx and events_undelivered_idx: no query reads them (listing filters by
 *   workspace first; nothing delivers events yet, and a deliverer brings the index it reads).
 * - events: seq becomes the table's own key (INTEGER PRIMARY KEY), so events_seq_idx goes and
 *   MAX(seq) + 1 reads the table's last row.
 * - audit_events: WITHOUT ROWID, stored in (workspace_id, seq) order, the key it is read by,
 *   instead of a rowid table plus an index on that key. */
static const char lean_writes_sql[] =
    "DROP INDEX payments_status_idx;\n"
    "DROP INDEX events_undelivered_idx;\n"
    "CREATE TABLE events_new (\n"
    "    seq INTEGER PRIMARY KEY,\n"
    "    id TEXT NOT NULL,\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    type TEXT NOT NULL,\n"
    "    resource_type TEXT NOT NULL,\n"
    "    resource_id TEXT NOT NULL,\n"
    "    resource_version INTEGER NOT NULL,\n"
    "    data TEXT NOT NULL,\n"
    "    request_id TEXT NOT NULL,\n"
    "    idempotency_key TEXT,\n"
    "    created_at TEXT NOT NULL,\n"
    "    delivered_at TEXT\n"
    ");\n"
    "INSERT INTO events_new (seq, id, workspace_id, type, resource_type, resource_id, "
    "resource_version, data, request_id, idempotency_key, created_at, delivered_at) "
    "SELECT seq, id, workspace_id, type, resource_type, resource_id, resource_version, data, "
    "request_id, idempotency_key, created_at, delivered_at FROM events;\n"
    "DROP TABLE events;\n"
    "ALTER TABLE events_new RENAME TO events;\n"
    "CREATE UNIQUE INDEX events_id_idx ON events (id);\n"
    "CREATE INDEX events_resource_idx ON events (resource_id, seq);\n"
    "CREATE TABLE audit_events_new (\n"
    "    workspace_id TEXT NOT NULL REFERENCES workspaces(id),\n"
    "    seq INTEGER NOT NULL,\n"
    "    id TEXT NOT NULL,\n"
    "    occurred_at TEXT NOT NULL,\n"
    "    actor_id TEXT NOT NULL,\n"
    "    action TEXT NOT NULL,\n"
    "    resource_type TEXT NOT NULL,\n"
    "    resource_id TEXT NOT NULL,\n"
    "    before_status TEXT,\n"
    "    after_status TEXT,\n"
    "    detail TEXT,\n"
    "    request_id TEXT NOT NULL,\n"
    "    prev_hash TEXT NOT NULL,\n"
    "    hash TEXT NOT NULL,\n"
    "    PRIMARY KEY (workspace_id, seq)\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO audit_events_new (workspace_id, seq, id, occurred_at, actor_id, action, "
    "resource_type, resource_id, before_status, after_status, detail, request_id, prev_hash, "
    "hash) SELECT workspace_id, seq, id, occurred_at, actor_id, action, resource_type, "
    "resource_id, before_status, after_status, detail, request_id, prev_hash, hash "
    "FROM audit_events;\n"
    "DROP TABLE audit_events;\n"
    "ALTER TABLE audit_events_new RENAME TO audit_events;\n"
    "CREATE UNIQUE INDEX audit_events_id_idx ON audit_events (id);\n";

/* CORS (runtime/cors.h): the web origins each OAuth client registered, looked up by origin
 * for a preflight (any client) and by client and origin for an answer to its tokens. */
static const char oauth_origins_sql[] =
    "CREATE TABLE oauth_client_origins (\n"
    "    client_id TEXT NOT NULL REFERENCES oauth_clients(id),\n"
    "    origin TEXT NOT NULL,\n"
    "    position INTEGER NOT NULL,\n"
    "    PRIMARY KEY (client_id, origin)\n"
    ");\n"
    "CREATE INDEX oauth_client_origins_origin_idx ON oauth_client_origins (origin);\n";

/* Maker-checker (handlers/payments_makers.c): the acting person of a payment's creator (a
 * service account acts for the user who created it), every other person who changed a field
 * approvals depend on (fields: a bit mask, bit 0 amount, 1 currency, 2 beneficiary_id,
 * 3 originating_account, 4 type, 5 priority, 6 effective_date, 7 remittance_information),
 * the velocity window of the approval policy, and a beneficiary's makers per approval round
 * (fields: bit 0 created it, 1 name, 2 account_holder_name, 3 account_identification, 4 bank,
 * 5 currency, 6 country). */
static const char maker_checker_sql[] =
    "ALTER TABLE payments ADD COLUMN created_for TEXT;\n"
    "UPDATE payments SET created_for = coalesce((SELECT s.created_by FROM service_accounts s "
    "WHERE s.id = payments.created_by), created_by);\n"
    "CREATE INDEX payments_velocity_idx ON payments (beneficiary_id, created_for, created_at);\n"
    "CREATE TABLE payment_makers (\n"
    "    payment_id TEXT NOT NULL REFERENCES payments(id),\n"
    "    person_id TEXT NOT NULL,\n"
    "    via TEXT,\n"
    "    fields INTEGER NOT NULL,\n"
    "    first_at TEXT NOT NULL,\n"
    "    last_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (payment_id, person_id)\n"
    ") WITHOUT ROWID;\n"
    "ALTER TABLE approval_policies ADD COLUMN velocity_window_hours INTEGER NOT NULL DEFAULT 24;\n"
    "ALTER TABLE beneficiaries ADD COLUMN approval_round INTEGER NOT NULL DEFAULT 1;\n"
    "CREATE TABLE beneficiary_makers (\n"
    "    beneficiary_id TEXT NOT NULL REFERENCES beneficiaries(id),\n"
    "    round INTEGER NOT NULL,\n"
    "    person_id TEXT NOT NULL,\n"
    "    via TEXT,\n"
    "    fields INTEGER NOT NULL,\n"
    "    made_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (beneficiary_id, round, person_id)\n"
    ") WITHOUT ROWID;\n";

/* Identities no other workspace can claim (issue 18). Invitation e-mails leave through an
 * outbox written in the inviting transaction (runtime/mail.c delivers it after the commit and
 * clears the body, which holds the invitation token, once delivered or given up); an
 * invitation remembers its message. The last login is per membership: a workspace sees when
 * its member last opened a session there, never in another workspace (filled from the
 * sessions each membership opened so far; the account-wide column is emptied). It has a table
 * of its own, apart from members: a login must not count as a membership change, which
 * empties the privilege cache (handlers/privileges.c). */
static const char identity_sql[] =
    "CREATE TABLE mail_outbox (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    recipient TEXT NOT NULL,\n"
    "    subject TEXT NOT NULL,\n"
    "    body TEXT,\n"
    "    status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'failed')),\n"
    "    attempts INTEGER NOT NULL DEFAULT 0,\n"
    "    next_attempt_ms INTEGER NOT NULL,\n"
    "    last_error TEXT,\n"
    "    created_at TEXT NOT NULL,\n"
    "    sent_at TEXT\n"
    ");\n"
    "CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_ms) WHERE status = 'queued';\n"
    "ALTER TABLE invitations ADD COLUMN mail_id TEXT;\n"
    "CREATE TABLE member_logins (\n"
    "    workspace_id TEXT NOT NULL,\n"
    "    user_id TEXT NOT NULL,\n"
    "    last_login_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (workspace_id, user_id)\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO member_logins (workspace_id, user_id, last_login_at)\n"
    "    SELECT workspace_id, user_id, max(created_at) FROM sessions\n"
    "    GROUP BY workspace_id, user_id;\n"
    "UPDATE users SET last_login_at = NULL;\n";

/* Account security (issue 18): known devices (the OWASP "device cookie" design: a login
 * from a device that signed in before is not held up by the failures of others), the
 * per-client back-off of failed logins (a failure count and the time of the last one, per
 * account for unknown clients and per known device), and the sealed device token a browser
 * sign-in hands to the next authorization page. */
static const char account_security_sql[] =
    "CREATE TABLE login_devices (\n"
    "    id TEXT PRIMARY KEY,\n"
    "    user_id TEXT NOT NULL REFERENCES users(id),\n"
    "    token_hash TEXT NOT NULL UNIQUE,\n"
    "    created_at TEXT NOT NULL,\n"
    "    last_used_at TEXT NOT NULL,\n"
    "    expires_at INTEGER NOT NULL\n"
    ");\n"
    "CREATE INDEX login_devices_user_idx ON login_devices (user_id, last_used_at);\n"
    "CREATE INDEX login_devices_expiry_idx ON login_devices (expires_at);\n"
    "CREATE TABLE login_backoff (\n"
    "    key TEXT PRIMARY KEY,\n"
    "    failures INTEGER NOT NULL,\n"
    "    last_failure_at INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "CREATE INDEX login_backoff_age_idx ON login_backoff (last_failure_at);\n"
    "ALTER TABLE oauth_browser_sessions ADD COLUMN device_token TEXT;\n";

/* Identity fixes (issue 18 review):
 * - the last accepted TOTP step of each account moves out of users into a table of its own: a
 *   login recording it wrote users, which the privilege cache watches (handlers/privileges.c),
 *   so every MFA login emptied the cache;
 * - invitations still pending from before they were e-mailed (no mail_id: their token went
 *   back to the inviter) are superseded; the token check refuses any such one too. */
static const char identity_fixes_sql[] =
    "CREATE TABLE mfa_steps (\n"
    "    user_id TEXT PRIMARY KEY REFERENCES users(id),\n"
    "    last_step INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO mfa_steps (user_id, last_step)\n"
    "    SELECT id, mfa_last_step FROM users WHERE mfa_last_step > 0;\n"
    "ALTER TABLE users DROP COLUMN mfa_last_step;\n"
    "UPDATE invitations SET status = 'superseded' WHERE status = 'pending' AND mail_id IS NULL;\n";

/* Maker-checker review (issue 18): approvals are given for a beneficiary as it was. A payment
 * records the approval round of its beneficiary when its own approval round starts
 * (beneficiary_round; NULL: not known, rows from before), and approvals given before the
 * beneficiary's round moved on no longer count. Batches get approval rounds too
 * (payment_batches.approval_round, batch_approvals.round) and their maker's acting person
 * (created_for, as payments have it). */
static const char maker_review_sql[] =
    "ALTER TABLE payments ADD COLUMN beneficiary_round INTEGER;\n"
    "UPDATE payments SET beneficiary_round = (SELECT b.approval_round FROM beneficiaries b "
    "WHERE b.id = payments.beneficiary_id);\n"
    "ALTER TABLE payment_batches ADD COLUMN approval_round INTEGER NOT NULL DEFAULT 1;\n"
    "ALTER TABLE payment_batches ADD COLUMN created_for TEXT;\n"
    "UPDATE payment_batches SET created_for = (SELECT p.created_for FROM payments p "
    "WHERE p.batch_id = payment_batches.id ORDER BY p.batch_position LIMIT 1);\n"
    "CREATE TABLE batch_approvals_by_round (\n"
    "    batch_id TEXT NOT NULL REFERENCES payment_batches(id),\n"
    "    round INTEGER NOT NULL,\n"
    "    user_id TEXT NOT NULL,\n"
    "    decision TEXT NOT NULL CHECK (decision IN ('approved', 'denied')),\n"
    "    reason TEXT,\n"
    "    decided_at TEXT NOT NULL,\n"
    "    PRIMARY KEY (batch_id, round, user_id)\n"
    ");\n"
    "INSERT INTO batch_approvals_by_round (batch_id, round, user_id, decision, reason, "
    "decided_at) SELECT batch_id, 1, user_id, decision, reason, decided_at FROM "
    "batch_approvals;\n"
    "DROP TABLE batch_approvals;\n"
    "ALTER TABLE batch_approvals_by_round RENAME TO batch_approvals;\n"
    /* Items still open at the upgrade were made and decided under the old rules: they fail
     * closed. A service account's decision no longer counts: a payment or batch whose current
     * round holds one starts a new round, and one it approved goes back to pending_approval.
     * A payment made through a service-account token counts every person who had minted a
     * token of that account by then as a maker (the minter was not recorded). A payment whose
     * beneficiary changed after the payment was last changed or decided gets beneficiary round
     * 0, which matches none: its approvals are void at the next decision, and the worker fails
     * it rather than send it to the new details. */
    "UPDATE payments SET approval_round = approval_round + 1, version = version + 1, "
    "status = CASE WHEN status IN ('approved', 'scheduled') THEN 'pending_approval' "
    "ELSE status END "
    "WHERE batch_id IS NULL AND status IN ('pending_approval', 'approved', 'scheduled') "
    "AND EXISTS (SELECT 1 FROM payment_approvals a WHERE a.payment_id = payments.id "
    "AND a.round = payments.approval_round AND a.user_id LIKE 'sa\\_%' ESCAPE '\\');\n"
    "UPDATE payment_batches SET approval_round = approval_round + 1, version = version + 1, "
    "status = CASE WHEN status = 'approved' THEN 'pending_approval' ELSE status END "
    "WHERE status IN ('pending_approval', 'approved') AND EXISTS (SELECT 1 FROM "
    "batch_approvals a WHERE a.batch_id = payment_batches.id "
    "AND a.round = payment_batches.approval_round AND a.user_id LIKE 'sa\\_%' ESCAPE '\\');\n"
    "UPDATE payments SET status = 'pending_approval', version = version + 1 "
    "WHERE status IN ('approved', 'scheduled') AND batch_id IN "
    "(SELECT id FROM payment_batches WHERE status = 'pending_approval');\n"
    "INSERT INTO payment_makers (payment_id, person_id, via, fields, first_at, last_at) "
    "SELECT p.id, t.created_by, p.created_by, 0, p.created_at, p.created_at FROM payments p "
    "JOIN service_account_tokens t ON t.service_account_id = p.created_by "
    "WHERE p.status IN ('pending_approval', 'approved', 'scheduled') "
    "AND t.created_at <= p.created_at AND t.created_by LIKE 'usr\\_%' ESCAPE '\\' "
    "ON CONFLICT (payment_id, person_id) DO NOTHING;\n"
    "UPDATE payments SET beneficiary_round = 0 "
    "WHERE status IN ('pending_approval', 'approved', 'scheduled') AND (SELECT b.updated_at "
    "FROM beneficiaries b WHERE b.id = payments.beneficiary_id) > payments.updated_at;\n";

const struct migration migrations_list[] = {
    {1, "initial", initial_sql},
    {2, "ratelimit_idempotency", ratelimit_idempotency_sql},
    {3, "sessions_refresh", sessions_refresh_sql},
    {4, "roles", roles_sql},
    {5, "service_accounts", service_accounts_sql},
    {6, "invitations", invitations_sql},
    {7, "mfa", mfa_sql},
    {8, "payments", payments_sql},
    {9, "settlement", settlement_sql},
    {10, "batches", batches_sql},
    {11, "events_seq", events_seq_sql},
    {12, "oauth", oauth_sql},
    {13, "lean_writes", lean_writes_sql},
    {14, "oauth_origins", oauth_origins_sql},
    {15, "maker_checker", maker_checker_sql},
    {16, "identity", identity_sql},
    {17, "account_security", account_security_sql},
    {18, "maker_review", maker_review_sql},
    {19, "identity_fixes", identity_fixes_sql},
};

const size_t migrations_count = sizeof migrations_list / sizeof migrations_list[0];
