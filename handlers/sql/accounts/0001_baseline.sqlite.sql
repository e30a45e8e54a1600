-- The accounts API's tables (handlers/accounts*.c, handlers/workspace.c), as the nineteen
-- migrations of the single list that came before per-component migrations left them.

-- Workspaces: listing order everywhere is (created_at, id): created_at has millisecond
-- resolution and ids are unique, so the pair is a total order and a cursor holding both is
-- stable without an insertion counter. A workspace's quota is the server's configured default
-- unless an operator set its own (`admin set-rate-limit`): rate_limit_per_minute is a nullable
-- override, never a copy of a default that could not follow a change of the configuration.
-- version is for ETag / If-Match on the settings.
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    token_lifetime_seconds INTEGER NOT NULL DEFAULT 86400,
    rate_limit_per_minute INTEGER
        CHECK (rate_limit_per_minute IS NULL OR rate_limit_per_minute BETWEEN 1 AND 1000000000),
    version INTEGER NOT NULL DEFAULT 1
);

-- Users: an e-mail address is one account across workspaces (email_norm, lower case, unique).
-- TOTP multi-factor authentication: the secret sealed (runtime/seal.c); the last accepted
-- time step is in mfa_steps, not here (a login recording it would write users, which the
-- privilege cache watches: handlers/privileges.c). The last login is per membership
-- (member_logins); last_login_at here is no longer written.
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    email_norm TEXT NOT NULL UNIQUE CHECK (email_norm = lower(email_norm)),
    password_hash TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active'
        CHECK (status IN ('invited', 'active', 'suspended', 'deactivated')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_login_at TEXT,
    name TEXT,
    mfa_status TEXT NOT NULL DEFAULT 'none'
        CHECK (mfa_status IN ('none', 'pending', 'enabled')),
    mfa_secret TEXT
);

-- Memberships. role is any built-in role key (x-roles in the spec, generated/scopes.c) or a
-- custom role of the member's workspace (roles, the admin API's), checked by the code that
-- assigns it.
CREATE TABLE members (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    user_id TEXT NOT NULL REFERENCES users(id),
    role TEXT NOT NULL,
    created_at TEXT NOT NULL,
    invited_by TEXT,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX members_user_idx ON members (user_id);

-- Sessions as refresh-token families (RFC 9700 §4.14.2): every refresh token ever issued is
-- kept (hashed, refresh_tokens) with the moment it was used, so presenting a used one is
-- recognised as reuse and revokes its session. A session remembers the scope originally
-- granted (a refresh may narrow it, never widen it), and the OAuth client and grant it was
-- issued for, if any.
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    user_id TEXT NOT NULL REFERENCES users(id),
    refresh_token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    revoked_at TEXT,
    scope TEXT NOT NULL DEFAULT '',
    last_used_at TEXT,
    revoked_reason TEXT,
    client_id TEXT,
    grant_id TEXT
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_workspace_idx ON sessions (workspace_id);
CREATE INDEX sessions_revoked_idx ON sessions (revoked_at);
CREATE INDEX sessions_grant_idx ON sessions (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX sessions_client_idx ON sessions (client_id) WHERE client_id IS NOT NULL;

CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    created_at TEXT NOT NULL,
    used_at TEXT
);
CREATE INDEX refresh_tokens_session_idx ON refresh_tokens (session_id);

-- Invitations: an admin invites an e-mail address with a role; the one-time token (e-mailed,
-- stored as SHA-256) lets its holder complete the signup within 7 days. A new invitation for
-- the same address and workspace supersedes the pending one. mail_id is the e-mail that
-- carried it (mail_outbox); an invitation without one is never accepted (its token went back
-- to the inviter before invitations were e-mailed).
CREATE TABLE invitations (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    email TEXT NOT NULL,
    email_norm TEXT NOT NULL,
    role TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'superseded')),
    invited_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    accepted_at TEXT,
    user_id TEXT,
    mail_id TEXT
);
CREATE INDEX invitations_email_idx ON invitations (workspace_id, email_norm);

-- One-time MFA recovery codes, stored as digests.
CREATE TABLE mfa_recovery_codes (
    user_id TEXT NOT NULL REFERENCES users(id),
    code_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    used_at TEXT,
    PRIMARY KEY (user_id, code_hash)
);

-- The last accepted TOTP time step of each account: a code is accepted once.
CREATE TABLE mfa_steps (
    user_id TEXT PRIMARY KEY REFERENCES users(id),
    last_step INTEGER NOT NULL
) WITHOUT ROWID;

-- The last login per membership: a workspace sees when its member last opened a session
-- there, never in another workspace. A table of its own, apart from members: a login must not
-- count as a membership change, which empties the privilege cache (handlers/privileges.c).
CREATE TABLE member_logins (
    workspace_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    last_login_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
) WITHOUT ROWID;

-- OAuth 2.0 (handlers/accounts_oauth*.c): registered clients, the users' grants to them,
-- single-use authorization codes, the authorization pages' browser sessions and pending
-- requests. Secrets, codes and cookies are stored as SHA-256 digests only. Times the code
-- compares are Unix milliseconds.
CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('public', 'confidential')),
    redirect_uris TEXT NOT NULL,
    scopes TEXT NOT NULL,
    secret_hash TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
    created_by TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX oauth_clients_list_idx ON oauth_clients (workspace_id, created_at DESC, id DESC);

CREATE TABLE oauth_grants (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    user_id TEXT NOT NULL REFERENCES users(id),
    client_id TEXT NOT NULL REFERENCES oauth_clients(id),
    scope TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE UNIQUE INDEX oauth_grants_active_idx ON oauth_grants (user_id, client_id)
    WHERE revoked_at IS NULL;
CREATE INDEX oauth_grants_list_idx
    ON oauth_grants (user_id, workspace_id, created_at DESC, id DESC);

CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES oauth_clients(id),
    grant_id TEXT NOT NULL REFERENCES oauth_grants(id),
    workspace_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at TEXT,
    session_id TEXT
);

-- device_token: the sealed device token a browser sign-in hands to the next authorization
-- page (login_devices).
CREATE TABLE oauth_browser_sessions (
    token_hash TEXT PRIMARY KEY,
    csrf TEXT NOT NULL,
    user_id TEXT,
    pending_email TEXT,
    pending_until INTEGER,
    created_at TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    device_token TEXT
);

CREATE TABLE oauth_requests (
    id TEXT PRIMARY KEY,
    browser_hash TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES oauth_clients(id),
    redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL,
    state TEXT,
    code_challenge TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    decided_at TEXT
);

-- CORS (runtime/cors.h): the web origins each OAuth client registered, looked up by origin
-- for a preflight (any client) and by client and origin for an answer to its tokens.
CREATE TABLE oauth_client_origins (
    client_id TEXT NOT NULL REFERENCES oauth_clients(id),
    origin TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (client_id, origin)
);
CREATE INDEX oauth_client_origins_origin_idx ON oauth_client_origins (origin);

-- Account security: known devices (the OWASP "device cookie" design: a login from a device
-- that signed in before is not held up by the failures of others), and the per-client
-- back-off of failed logins (a failure count and the time of the last one, per account for
-- unknown clients and per known device). Times compared are Unix milliseconds.
CREATE TABLE login_devices (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    last_used_at TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX login_devices_user_idx ON login_devices (user_id, last_used_at);
CREATE INDEX login_devices_expiry_idx ON login_devices (expires_at);

CREATE TABLE login_backoff (
    key TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    last_failure_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX login_backoff_age_idx ON login_backoff (last_failure_at);
