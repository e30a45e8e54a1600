-- PostgreSQL dialect of 0001_baseline.sqlite.sql, table for table the same: BIGINT for every
-- integer (SQLite's INTEGER is 64-bit), no WITHOUT ROWID (PostgreSQL has no rowid);
-- CHECKs, partial indexes and UNIQUE as there.
-- The admin API's tables (handlers/admin.c), as the nineteen migrations of the single list that
-- came before per-component migrations left them. Refers to the accounts API's workspaces.

-- Roles that grant scopes: the built-in ones are in the spec (x-roles, generated/scopes.c);
-- workspaces add their own here. approval_limits: the role's per-currency approval limits.
CREATE TABLE roles (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    scopes TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    approval_limits TEXT,
    PRIMARY KEY (workspace_id, key)
);

-- Service accounts: non-human principals of a workspace, holding a role; their tokens carry
-- an explicit subset of the role's scopes, never expire and are revoked one by one (or all at
-- once by disabling the account). A token is stored by id only: its text is shown once.
CREATE TABLE service_accounts (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name TEXT NOT NULL,
    description TEXT,
    role TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
    version BIGINT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    disabled_at TEXT
);
CREATE INDEX service_accounts_list_idx
    ON service_accounts (workspace_id, created_at DESC, id DESC);

CREATE TABLE service_account_tokens (
    id TEXT PRIMARY KEY,
    service_account_id TEXT NOT NULL REFERENCES service_accounts(id),
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name TEXT,
    scope TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX service_account_tokens_list_idx
    ON service_account_tokens (service_account_id, created_at DESC, id DESC);
