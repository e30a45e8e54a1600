-- The rates API's rate alerts (handlers/rates_alerts.c). Refers to the accounts API's
-- workspaces only: nothing here depends on the live rates' (0001) or the curves' (0002) tables.
-- Rates are exact decimal text as given (the condition's value) or as evaluated (10 decimal
-- places); times RFC 3339 UTC text with milliseconds, so they compare as text.
--
-- status as stored: an alert whose expires_at has passed is shown `expired` from then on
-- (a read says so; a write or the next evaluation of its pair stores it). last_evaluated_*
-- move on every evaluated rate without a new version: only a firing, or a change by the
-- client, makes one (the spec's examples: an active alert at version 1 with a last rate).
CREATE TABLE rate_alerts (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    pair TEXT NOT NULL,
    condition_field TEXT NOT NULL CHECK (condition_field IN ('bid', 'ask', 'mid')),
    condition_operator TEXT NOT NULL CHECK (condition_operator IN
        ('gt', 'gte', 'lt', 'lte', 'cross_above', 'cross_below')),
    condition_value TEXT NOT NULL,
    repeat TEXT NOT NULL CHECK (repeat IN ('once', 'every_time')),
    notify TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'triggered', 'paused', 'expired')),
    expires_at TEXT NOT NULL,
    triggered_at TEXT,
    trigger_count BIGINT NOT NULL DEFAULT 0 CHECK (trigger_count >= 0),
    last_evaluated_rate TEXT,
    last_evaluated_at TEXT,
    created_by TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    version BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
-- The list: a workspace's alerts newest first.
CREATE INDEX rate_alerts_list_idx ON rate_alerts (workspace_id, created_at DESC, id DESC);
-- Every rate that becomes current reads the active alerts of its pair (of every workspace for
-- a sandbox-market rate, of one workspace for a pushed one): by pair and status first.
CREATE INDEX rate_alerts_pair_idx ON rate_alerts (pair, status, workspace_id);
-- The limit of 200 active or paused alerts per workspace counts by status.
CREATE INDEX rate_alerts_status_idx ON rate_alerts (workspace_id, status);
